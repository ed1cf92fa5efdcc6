// RedisStore: the Store on Redis 7 (see taskledger/ledger/redis_store.h and
// docs/redis-keys.md). A conversation is one stream, `tl:{t:c}:turns`, whose
// entry 0-<v> holds turn v (field `t`) and, every snapshot_every turns (more
// for a state of many entries: SnapshotStride), the full state (field `s`). A commit is one call of
// the Redis Function tl_commit (internal/ledger_redis_function.h), which appends the turn only if
// the head is the version it was built on: check and write are atomic, in one round trip. A batch
// is one pipeline of such calls. Records are the codec's JSON documents serialised as CBOR,
// written directly from the structs (internal/redis_records.h). Reads (XREVRANGE / XRANGE /
// SCAN) are redis_store_read.cc; this file is the commit path and the store's opening.
//
// On a Redis Cluster every call goes to the primary of its key's slot through
// the RedisRouter, which follows redirects; a batch of commits goes out to
// all primaries at once, and listing a tenant scans every primary.
//
// Thread-safe: every call leases its own connections (RedisRouter's pools).
#include "taskledger/ledger/redis_store.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <random>

#include "internal/ledger_redis_function.h"
#include "internal/redis_records.h"
#include "internal/redis_store_read.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/redis/client.h"
#include "taskledger/redis/keys.h"
#include "taskledger/redis/router.h"

namespace taskledger {
namespace {

// Snapshots are taken on versions that are multiples of this stride. Up to
// 2 * kSnapshotEntries - 1 records (entries plus recorded calls: a snapshot
// carries every call of the conversation, and a write-heavy one has far more
// calls than entries) it is snapshot_every; a larger state doubles it once per
// doubling of its size, so writing snapshots costs between 1 and 2 times
// kSnapshotEntries / snapshot_every records per turn (16 to 32 by default)
// whatever the state holds (a full snapshot every K turns would make a long
// conversation quadratic). Readers page back to the newest snapshot, so a
// read replays at most state / 16 turns: about one state's worth of records
// when a turn changes 16. 256 balances the two: with 1,024, the
// snapshots of a long conversation were 64 to 128 records per turn, several
// times the turn's own record, and halved `bench load`'s turns/s on a ledger
// of 100,000+ entries, while reading its head was no faster (redis-keys.md).
constexpr size_t kSnapshotEntries = 256;

uint64_t SnapshotStride(uint64_t every, const LedgerState& state) {
  uint64_t stride = every;
  for (size_t n = (state.size() + state.calls.size()) / kSnapshotEntries;
       n > 1 && stride < (uint64_t{1} << 40); n /= 2) {
    stride *= 2;
  }
  return stride;
}

using internal::Reply;

// A new conversation's incarnation (docs/redis-keys.md, "Incarnations"): 128
// random bits in hex, drawn per conversation created from the system's
// source (no generator state a forked process could share), so no two
// creations of one conversation share one.
std::string NewIncarnation() {
  std::random_device device;
  char out[33];
  std::snprintf(out, sizeof out, "%08x%08x%08x%08x", device(), device(), device(), device());
  return std::string(out, 32);
}

using internal::DescribeConversation;

Status Conflict(const CommitRequest& r, const std::string& head) {
  return Status::Conflict("conversation '" + DescribeConversation(r.id) + "' is at version " +
                          head + "; this turn was built on version " +
                          std::to_string(r.turn->turn - 1));
}

class RedisStore final : public Store {
 public:
  RedisStore(std::unique_ptr<internal::RedisRouter> router, const RedisOptions& options)
      : options_(options.store), router_(std::move(router)) {
    options_replicas_ = options.replicas;
    if (options.replicas == 0) carrier_id_ = "redis " + options.url;
    if (options.replicas > 0) {
      wait_ = {"WAIT", std::to_string(options.replicas),
               std::to_string(options.replica_timeout.count())};
    }
    if (options_.snapshot_every == 0) options_.snapshot_every = 1;
    if (options_.retention) {
      retention_ms_ = std::to_string(std::max<int64_t>(
          1, std::chrono::duration_cast<std::chrono::milliseconds>(*options_.retention).count()));
    }
  }

  // Connects (and authenticates) once, so a wrong URL fails at open, and
  // loads the commit function unless the server holds this very version.
  Status CommitTurn(const ConversationId& id, const TurnRecord& turn,
                    const LedgerState& after) override {
    CommitRequest request{id, &turn, &after};
    return CommitTurns(std::span<const CommitRequest>(&request, 1)).front();
  }

  // Every commit of the batch is one FCALL tl_commit, all in one pipeline;
  // see docs/redis-keys.md ("Commit protocol"). A second round trip happens
  // only if the server had lost the function library (FUNCTION FLUSH): it is
  // loaded again and the commits that found no function are sent again.
  std::vector<Status> CommitTurns(std::span<const CommitRequest> batch) override {
    std::vector<Status> out(batch.size());
    std::vector<Pending> commits;
    commits.reserve(batch.size());
    std::string records;  // every commit's encoded turn (and state), end to end
    records.reserve(batch.size() * 2048);
    if (router_->cluster()) return CommitOnCluster(batch, records, commits, out);
    auto client = router_->single().Take();
    // Each commit is queued as soon as it is encoded: a long batch starts
    // going out (RedisClient::kStreamBytes) while the rest is being encoded.
    for (size_t i = 0; i < batch.size(); ++i) {
      if (Status s = Encode(batch[i], i, records, commits); !s.ok()) {
        out[i] = std::move(s);
      } else {
        Queue(*client, commits.back(), records);
      }
    }
    if (commits.empty()) return out;
    auto replies = client->FlushReloading(internal::LedgerFunctionLibrary(),
                                          [&](size_t k) { Queue(*client, commits[k], records); });
    std::optional<Result<Reply>> waited;
    if (replies && !wait_.empty()) waited = client->Command(wait_);
    for (size_t k = 0; k < commits.size(); ++k) {
      const Pending& c = commits[k];
      out[c.index] = replies ? Outcome(batch[c.index], c, (*replies)[k]) : replies.error();
      if (waited && out[c.index].ok()) {
        out[c.index] = *waited ? Replicated(batch[c.index], **waited) : waited->error();
      }
    }
    return out;
  }

  std::string CommitCarrierId() const override { return carrier_id_; }

  // The commit encoded as for tl_commit (the call-bytes cache sees it as
  // any commit), sent by `carrier`, its reply worded as CommitTurn's.
  Result<bool> CommitTurnVia(const ConversationId& id, const TurnRecord& turn,
                             const LedgerState& after, const CommitCarrier& carrier) override {
    if (carrier_id_.empty()) return Store::CommitTurnVia(id, turn, after, carrier);
    const CommitRequest request{id, &turn, &after};
    std::string records;
    std::vector<Pending> commits;
    if (Status s = Encode(request, 0, records, commits); !s.ok()) return s;
    const Pending& c = commits.front();
    const std::string_view data(records);
    auto carried = carrier({c.key, c.base, retention_ms_, data.substr(c.turn_at, c.turn_size),
                            data.substr(c.state_at, c.state_size), c.incarnation});
    if (!carried) return carried.error();
    if (!carried->refusal.empty()) {
      return Outcome(request, c, Reply::Error(std::move(carried->refusal)));
    }
    return carried->committed;
  }

  Result<uint64_t> Head(const ConversationId& id) override {
    return internal::ReadStreamHead(*router_, id);
  }

  Result<LedgerState> ReadVersion(const ConversationId& id, uint64_t version) override {
    if (version == 0) return LedgerState{};
    return internal::ReadStreamState(*router_, id, version, options_.snapshot_every);
  }

  Result<LedgerState> ReadHead(const ConversationId& id) override {
    return internal::ReadStreamState(*router_, id, std::nullopt, options_.snapshot_every);
  }

  Result<HeadRead> ReadHeadAfter(const ConversationId& id, const HeadRead& known) override {
    std::optional<std::string> seen;
    auto caught_up = internal::CatchUpStreamState(*router_, id, known, &seen);
    if (!caught_up.has_value()) return caught_up.error();
    if (caught_up.value()) return std::move(*caught_up.value());
    // The incarnation is read before the state (tl_since's, or in the first
    // page's round trip): if the conversation is dropped and written again
    // before the state is read, the state is labelled with the older one,
    // which the stream never shows again (a later catch-up reads it whole).
    HeadRead read;
    if (seen) read.incarnation = std::move(*seen);
    auto head = internal::ReadStreamState(*router_, id, std::nullopt, options_.snapshot_every,
                                          &read.turn, seen ? nullptr : &read.incarnation);
    if (!head.has_value()) return head.error();
    read.state = std::move(head.value());
    return read;
  }

  bool KeepsIncarnations() const override { return true; }

  Result<std::string> IncarnationOf(const ConversationId& id, const TurnRecord& turn_one) override {
    return internal::StreamIncarnationOf(*router_, id, turn_one);
  }

  Result<std::vector<TurnRecord>> ReadTurns(const ConversationId& id, uint64_t first,
                                            uint64_t last) override {
    return internal::ReadStreamTurns(*router_, id, first, last);
  }

  Result<std::vector<std::string>> ListConversations(const std::string& tenant) override {
    return internal::ListStreamConversations(*router_, tenant);
  }

  Status DropConversation(const ConversationId& id) override {
    std::string key = internal::TurnStreamKey(id);
    auto reply = router_->Command(key, {"DEL", key});
    if (!reply) return reply.error();
    if (reply->is_error())
      return internal::ServerErrorToStatus(*reply, "drop " + DescribeConversation(id));
    return Status::Ok();
  }

 private:
  // One commit on the wire. Its records sit in the batch's shared buffer
  // (`records`), so queuing them copies each byte once, into the request.
  struct Pending {
    size_t index = 0;  // in the batch
    std::string key, base;
    size_t turn_at = 0, turn_size = 0, state_at = 0, state_size = 0;  // state_size 0: no snapshot
    std::string incarnation;  // a conversation's first turn only: NewIncarnation()
  };

  // InvalidArgument for a malformed request; else appends its Pending.
  Status Encode(const CommitRequest& r, size_t index, std::string& records,
                std::vector<Pending>& out) const {
    if (r.turn == nullptr || r.after == nullptr)
      return Status::InvalidArgument("commit: missing turn or state");
    const TurnRecord& turn = *r.turn;
    if (turn.turn == 0 || r.after->version != turn.turn) {
      return Status::InvalidArgument("commit " + DescribeConversation(r.id) +
                                     ": the state after the turn must carry its version");
    }
    Pending c;
    c.index = index;
    c.key = internal::TurnStreamKey(r.id);
    c.base = std::to_string(turn.turn - 1);
    c.turn_at = records.size();
    internal::AppendTurnRecordBytes(turn, records);
    c.turn_size = records.size() - c.turn_at;
    if (turn.turn == 1) c.incarnation = NewIncarnation();
    if (turn.turn % SnapshotStride(options_.snapshot_every, *r.after) == 0) {
      c.state_at = records.size();
      internal::AppendStateRecordBytes(*r.after, records, &calls_);
      c.state_size = records.size() - c.state_at;
    }
    out.push_back(std::move(c));
    return Status::Ok();
  }

  // FCALL tl_commit 1 key base retention turn [snapshot], or tl_commit2 with
  // "snapshot or ''" and the incarnation (turn 1). Retention applies
  // to the whole conversation (its one key); a store without retention makes
  // a conversation another store let expire permanent.
  void Queue(internal::RedisClient& client, const Pending& c, const std::string& records) const {
    std::string_view data(records);
    // A conversation's first turn carries its incarnation: tl_commit2.
    std::array<std::string_view, 9> fcall{"FCALL",
                                          c.incarnation.empty() ? "tl_commit" : "tl_commit2",
                                          "1",
                                          c.key,
                                          c.base,
                                          retention_ms_,
                                          data.substr(c.turn_at, c.turn_size)};
    size_t n = 7;
    if (c.state_size > 0 || !c.incarnation.empty())
      fcall[n++] = data.substr(c.state_at, c.state_size);
    if (!c.incarnation.empty()) fcall[n++] = c.incarnation;
    client.Queue(std::span<const std::string_view>(fcall.data(), n));
  }

  // The status of one commit from its FCALL reply.
  static Status Outcome(const CommitRequest& r, const Pending& c, const Reply& reply) {
    if (reply.is_integer() && reply.integer() == static_cast<int64_t>(r.turn->turn))
      return Status::Ok();
    std::string what = "commit " + DescribeConversation(r.id);
    if (auto head = internal::ConflictHead(reply)) return Conflict(r, std::to_string(*head));
    if (reply.is_error())
      return internal::CommitErrorToStatus(reply, what + " (built on version " + c.base + ")");
    return Status::Internal(what + ": unexpected reply " + reply.Describe());
  }

  // A landed commit's status from its WAIT reply.
  Status Replicated(const CommitRequest& r, const Reply& reply) const {
    if (reply.is_integer() && reply.integer() >= static_cast<int64_t>(options_replicas_)) {
      return Status::Ok();
    }
    return Status::Unavailable(
        "commit " + DescribeConversation(r.id) + ": on the primary, but " +
        (reply.is_integer() ? std::to_string(reply.integer()) : reply.Describe()) + " of " +
        std::to_string(options_replicas_) + " replicas confirmed it within " + wait_[2] +
        " ms (committing the same turn again is safe)");
  }

  StoreOptions options_;
  // The encoded calls of the last snapshot written (its conversation's next
  // snapshot encodes only the calls since).
  mutable internal::CallBytesCache calls_;
  std::string retention_ms_;
  std::string carrier_id_;  // CommitCarrierId(): "redis <url>", or "" when waiting for replicas
  uint32_t options_replicas_ = 0;
  internal::Argv wait_;  // WAIT replicas timeout; empty: no wait
  // CommitTurns on a cluster: every commit encoded first, then one pipeline
  // per primary, all in flight at once (RedisRouter::Batch).
  std::vector<Status> CommitOnCluster(std::span<const CommitRequest> batch, std::string& records,
                                      std::vector<Pending>& commits, std::vector<Status>& out) {
    for (size_t i = 0; i < batch.size(); ++i) {
      if (Status s = Encode(batch[i], i, records, commits); !s.ok()) out[i] = std::move(s);
    }
    if (commits.empty()) return out;
    std::vector<Reply> waited;
    auto replies = router_->Batch(
        commits.size(), &internal::LedgerFunctionLibrary(),
        [&](size_t k) { return std::string_view(commits[k].key); },
        [&](internal::RedisClient& client, size_t k) { Queue(client, commits[k], records); },
        wait_.empty() ? nullptr : &wait_, &waited);
    for (size_t k = 0; k < commits.size(); ++k) {
      const Pending& c = commits[k];
      out[c.index] = replies ? Outcome(batch[c.index], c, (*replies)[k]) : replies.error();
      if (!wait_.empty() && out[c.index].ok()) out[c.index] = Replicated(batch[c.index], waited[k]);
    }
    return out;
  }

  std::unique_ptr<internal::RedisRouter> router_;
};

}  // namespace

namespace internal {

Result<std::unique_ptr<RedisRouter>> OpenRedisRouter(RedisOptions& options,
                                                     const FunctionLibrary& library) {
  if (Status s = TakeDurabilityQuery(options.url, options.replicas, options.replica_timeout);
      !s.ok()) {
    return s;
  }
  auto router = RedisRouter::Open(
      options.url, {{options.connect_timeout, options.command_timeout}, options.cluster_timeout});
  if (!router) return router.error();
  if (Status s = (*router)->EnsureLoaded(library); !s.ok()) return s;
  return router;
}

}  // namespace internal

Result<std::unique_ptr<Store>> OpenRedisStore(const RedisOptions& options, const Clock& /*clock*/) {
  // Retention is judged by the server's clock (PEXPIRE), so `clock` is not
  // consulted; it is accepted for parity with NewMemoryStore.
  RedisOptions effective = options;
  auto router = internal::OpenRedisRouter(effective, internal::LedgerFunctionLibrary());
  if (!router) return router.error();
  return std::unique_ptr<Store>(std::make_unique<RedisStore>(std::move(router).value(), effective));
}

Result<std::unique_ptr<Store>> OpenStore(const std::string& url, StoreOptions options) {
  if (url.empty() || url == "memory") return NewMemoryStore(options);
  RedisOptions redis;
  redis.url = url;
  redis.store = options;
  return OpenRedisStore(redis);
}

}  // namespace taskledger
