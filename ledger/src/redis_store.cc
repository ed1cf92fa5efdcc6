// RedisStore: the Store on Redis 7 (see taskledger/ledger/redis_store.h and
// docs/redis-keys.md). A conversation is one stream, `tl:{t:c}:turns`, whose
// entry 0-<v> holds turn v (field `t`) and, every snapshot_every turns, the
// full state (field `s`). A commit is one MULTI / XLEN / XADD / PEXPIRE or
// PERSIST / EXEC transaction: XADD's explicit id refuses a version at or below
// the head and XLEN, read in the same transaction, tells a base above the
// head, so the check and the write are atomic, in one round trip, with no Lua.
// A batch is one pipeline of such transactions. Reads are XREVRANGE / XRANGE.
// Records are the codec's JSON documents serialised as CBOR, written
// directly from the structs (internal/redis_records.h).
//
// Thread-safe: every call leases its own connection from a RedisPool.
#include "taskledger/ledger/redis_store.h"

#include <algorithm>
#include <array>
#include <deque>
#include <set>

#include "internal/redis_client.h"
#include "internal/redis_keys.h"
#include "internal/redis_pool.h"
#include "internal/redis_records.h"
#include "internal/redis_stream.h"
#include "taskledger/ledger/memory_store.h"

namespace taskledger {
namespace {

using internal::Reply;
using internal::StreamEntry;

std::string Describe(const ConversationId& id) { return id.tenant + "/" + id.conversation; }

Status NotFound(const ConversationId& id, uint64_t version, uint64_t head) {
  return Status::NotFound("conversation '" + Describe(id) + "' has no version " +
                          std::to_string(version) + " (head is " + std::to_string(head) + ")");
}

Status Conflict(const CommitRequest& r, const std::string& head) {
  return Status::Conflict("conversation '" + Describe(r.id) + "' is at version " + head +
                          "; this turn was built on version " + std::to_string(r.turn->turn - 1));
}

// What XADD answers when the id is not above the stream's top: a conflict.
bool IsIdNotAbove(const Reply& r) {
  return r.is_error() && r.str().find("equal or smaller than the target stream top item") != std::string::npos;
}

class RedisStore final : public Store {
 public:
  RedisStore(internal::RedisEndpoint endpoint, const RedisOptions& options)
      : options_(options.store),
        pool_(std::move(endpoint), {options.connect_timeout, options.command_timeout}) {
    if (options_.snapshot_every == 0) options_.snapshot_every = 1;
    if (options_.retention) {
      retention_ms_ = std::to_string(std::max<int64_t>(
          1, std::chrono::duration_cast<std::chrono::milliseconds>(*options_.retention).count()));
    }
  }

  // Connects (and authenticates) once, so a wrong URL fails at open.
  Status Open() {
    auto pong = pool_.Take()->Command({"PING"});
    if (!pong) return pong.error();
    if (pong->is_error()) return internal::ServerErrorToStatus(*pong, "open");
    return Status::Ok();
  }

  Status CommitTurn(const ConversationId& id, const TurnRecord& turn,
                    const LedgerState& after) override {
    CommitRequest request{id, &turn, &after};
    return CommitTurns(std::span<const CommitRequest>(&request, 1)).front();
  }

  // Every commit of the batch goes out in one pipeline; see docs/redis-keys.md
  // ("Commit protocol"). A second round trip happens only for commits that
  // did not land: to tell a retry that already landed from a conflict, and to
  // take back a turn written above a gap.
  std::vector<Status> CommitTurns(std::span<const CommitRequest> batch) override {
    std::vector<Status> out(batch.size());
    std::vector<Pending> commits;
    commits.reserve(batch.size());
    std::string records;  // every commit's encoded turn (and state), end to end
    records.reserve(batch.size() * 2048);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (Status s = Encode(batch[i], i, records, commits); !s.ok()) out[i] = std::move(s);
    }
    if (commits.empty()) return out;
    auto client = pool_.Take();
    for (const Pending& c : commits) Queue(*client, c, records);
    auto replies = client->Flush();
    if (!replies) {
      for (const Pending& c : commits) out[c.index] = replies.error();
      return out;
    }
    size_t k = 0;
    for (Pending& c : commits) {
      TakeReplies(*replies, k, c);
      k += kCommandsPerCommit;
    }
    Settle(*client, batch, commits, records, out);
    return out;
  }

  Result<uint64_t> Head(const ConversationId& id) override {
    auto reply = pool_.Take()->Command({"XREVRANGE", internal::TurnStreamKey(id), "+", "-", "COUNT", "1"});
    if (!reply) return reply.error();
    return HeadOf(*reply, "head of " + Describe(id));
  }

  Result<LedgerState> ReadVersion(const ConversationId& id, uint64_t version) override {
    if (version == 0) return LedgerState{};
    return Read(id, version);
  }

  Result<LedgerState> ReadHead(const ConversationId& id) override { return Read(id, std::nullopt); }

  Result<std::vector<TurnRecord>> ReadTurns(const ConversationId& id, uint64_t first,
                                            uint64_t last) override {
    first = std::max<uint64_t>(first, 1);
    std::string key = internal::TurnStreamKey(id), what = "turns of " + Describe(id);
    std::string from = internal::EntryId(first), to = internal::EntryId(last);
    auto client = pool_.Take();
    client->Queue({"XREVRANGE", key, "+", "-", "COUNT", "1"});
    if (first <= last) client->Queue({"XRANGE", key, from, to});
    auto replies = client->Flush();
    if (!replies) return replies.error();
    auto head = HeadOf((*replies)[0], what);
    if (!head) return head.error();
    if (last > *head) return NotFound(id, last, *head);
    std::vector<TurnRecord> turns;
    if (first > last) return turns;
    std::vector<StreamEntry> entries;
    if (Status s = internal::AppendEntries((*replies)[1], what, entries); !s.ok()) return s;
    // Bracket the entries with the versions asked for, so that a gap at
    // either end is named like one in the middle.
    StreamEntry low{first - 1}, high{last + 1};
    entries.insert(entries.begin(), low);
    entries.push_back(high);
    if (Status s = internal::CheckContiguous(entries, false, what); !s.ok()) return s;
    for (size_t i = 1; i + 1 < entries.size(); ++i) {
      auto turn = internal::DecodeTurnEntry(entries[i], what);
      if (!turn) return turn.error();
      turns.push_back(std::move(turn.value()));
    }
    return turns;
  }

  Result<std::vector<std::string>> ListConversations(const std::string& tenant) override {
    std::set<std::string> found;  // SCAN may return a key more than once
    std::string cursor = "0", what = "list conversations of " + tenant;
    std::string pattern = internal::TenantStreamPattern(tenant);
    auto client = pool_.Take();
    // ACL key patterns do not filter what SCAN returns, so first touch a key
    // under the tenant's own prefix: a user whose ACL excludes that tenant
    // gets NOPERM here and sees no conversation names.
    auto allowed = client->Command({"EXISTS", internal::TenantKeyPrefix(tenant)});
    if (!allowed) return allowed.error();
    if (allowed->is_error()) return internal::ServerErrorToStatus(*allowed, what);
    do {
      auto reply = client->Command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000", "TYPE", "stream"});
      if (!reply) return reply.error();
      if (reply->is_error()) return internal::ServerErrorToStatus(*reply, what);
      if (reply->elements().size() != 2) return Status::Internal("SCAN: unexpected " + reply->Describe());
      cursor = reply->elements()[0].str();
      for (const Reply& key : reply->elements()[1].elements()) {
        if (auto conversation = internal::ConversationOfStreamKey(key.str(), tenant)) {
          found.insert(std::move(*conversation));
        }
      }
    } while (cursor != "0");
    return std::vector<std::string>(found.begin(), found.end());
  }

  Status DropConversation(const ConversationId& id) override {
    auto reply = pool_.Take()->Command({"DEL", internal::TurnStreamKey(id)});
    if (!reply) return reply.error();
    if (reply->is_error()) return internal::ServerErrorToStatus(*reply, "drop " + Describe(id));
    return Status::Ok();
  }

 private:
  // MULTI, XLEN, XADD, PEXPIRE or PERSIST, EXEC.
  static constexpr size_t kCommandsPerCommit = 5;

  // One commit on the wire. Its records sit in the batch's shared buffer
  // (`records`), so queuing them copies each byte once, into the request.
  struct Pending {
    size_t index = 0;  // in the batch
    uint64_t version = 0;
    std::string key, id;
    size_t turn_at = 0, turn_size = 0, state_at = 0, state_size = 0;  // state_size 0: no snapshot
    int64_t length_before = -1;  // XLEN inside the transaction, before the XADD
    Reply added;                 // XADD's reply, or the error that stood for it
  };

  // InvalidArgument for a malformed request; else appends its Pending.
  Status Encode(const CommitRequest& r, size_t index, std::string& records, std::vector<Pending>& out) const {
    if (r.turn == nullptr || r.after == nullptr) return Status::InvalidArgument("commit: missing turn or state");
    const TurnRecord& turn = *r.turn;
    if (turn.turn == 0 || r.after->version != turn.turn) {
      return Status::InvalidArgument("commit " + Describe(r.id) +
                                     ": the state after the turn must carry its version");
    }
    Pending c;
    c.index = index;
    c.version = turn.turn;
    c.key = internal::TurnStreamKey(r.id);
    c.id = internal::EntryId(turn.turn);
    c.turn_at = records.size();
    internal::AppendTurnRecordBytes(turn, records);
    c.turn_size = records.size() - c.turn_at;
    if (turn.turn % options_.snapshot_every == 0) {
      c.state_at = records.size();
      internal::AppendStateRecordBytes(*r.after, records);
      c.state_size = records.size() - c.state_at;
    }
    out.push_back(std::move(c));
    return Status::Ok();
  }

  // NOMKSTREAM after version 1: a conversation that was dropped or expired is
  // not re-created by a writer that still holds an old head.
  void Queue(internal::RedisClient& client, const Pending& c, const std::string& records) const {
    std::string_view data(records);
    std::array<std::string_view, 8> xadd;
    size_t n = 0;
    xadd[n++] = "XADD";
    xadd[n++] = c.key;
    if (c.version > 1) xadd[n++] = "NOMKSTREAM";
    xadd[n++] = c.id;
    xadd[n++] = "t";
    xadd[n++] = data.substr(c.turn_at, c.turn_size);
    if (c.state_size > 0) {
      xadd[n++] = "s";
      xadd[n++] = data.substr(c.state_at, c.state_size);
    }
    client.Queue({"MULTI"});
    client.Queue({"XLEN", c.key});
    client.Queue(std::span<const std::string_view>(xadd.data(), n));
    // Retention applies to the whole conversation (its one key); a store
    // without retention makes a conversation another store let expire permanent.
    if (options_.retention) {
      client.Queue({"PEXPIRE", c.key, retention_ms_});
    } else {
      client.Queue({"PERSIST", c.key});
    }
    client.Queue({"EXEC"});
  }

  // Fills c.length_before and c.added from replies [k, k + kCommandsPerCommit).
  static void TakeReplies(std::vector<Reply>& replies, size_t k, Pending& c) {
    Reply& exec = replies[k + kCommandsPerCommit - 1];
    if (exec.is_array() && exec.elements().size() == 3) {
      const Reply& length = exec.elements()[0];
      c.length_before = length.is_integer() ? length.integer() : -1;
      c.added = exec.elements()[1];
      return;
    }
    // The transaction did not run (EXECABORT: a command was refused when
    // queued, e.g. NOPERM); the first error says why.
    for (size_t j = k; j < k + kCommandsPerCommit; ++j) {
      if (replies[j].is_error()) {
        c.added = std::move(replies[j]);
        return;
      }
    }
    c.added = Reply::Error("ERR commit transaction: unexpected " + exec.Describe());
  }

  // Turns each XADD reply into the commit's status. Commits refused at or
  // below the head are checked for being a retry that already landed (its
  // entry holds byte for byte this turn); a turn written above a gap (its
  // base was above the head) is taken back and reported as a conflict.
  void Settle(internal::RedisClient& client, std::span<const CommitRequest> batch, std::vector<Pending>& commits,
              const std::string& records, std::vector<Status>& out) const {
    std::vector<Pending*> refused, above_gap;
    for (Pending& c : commits) {
      const CommitRequest& r = batch[c.index];
      if (c.added.is_string()) {
        if (c.length_before == static_cast<int64_t>(c.version - 1)) {
          out[c.index] = Status::Ok();
        } else {
          above_gap.push_back(&c);
        }
      } else if (c.added.is_nil()) {
        out[c.index] = Status::Conflict("conversation '" + Describe(r.id) + "' does not exist (dropped or expired); " +
                                        "this turn was built on version " + std::to_string(c.version - 1));
      } else if (IsIdNotAbove(c.added)) {
        refused.push_back(&c);
      } else {
        out[c.index] = c.added.is_error()
                           ? internal::ServerErrorToStatus(c.added, "commit " + Describe(r.id))
                           : Status::Internal("commit " + Describe(r.id) + ": unexpected reply " + c.added.Describe());
      }
    }
    if (refused.empty() && above_gap.empty()) return;
    for (const Pending* c : refused) {
      client.Queue({"XRANGE", c->key, c->id, c->id});
      client.Queue({"XREVRANGE", c->key, "+", "-", "COUNT", "1"});
    }
    // The writer's base was above the head; the stream's top must go back to
    // the head too, or every later XADD there would be refused.
    std::vector<std::string> heads;
    heads.reserve(above_gap.size());
    for (const Pending* c : above_gap) {
      heads.push_back(internal::EntryId(static_cast<uint64_t>(std::max<int64_t>(c->length_before, 0))));
      client.Queue({"MULTI"});
      client.Queue({"XDEL", c->key, c->id});
      client.Queue({"XSETID", c->key, heads.back()});
      client.Queue({"EXEC"});
    }
    auto replies = client.Flush();
    size_t k = 0;
    for (const Pending* c : refused) {
      const CommitRequest& r = batch[c->index];
      if (!replies) {
        out[c->index] = replies.error();
        continue;
      }
      std::vector<StreamEntry> stored, top;
      std::string what = "commit " + Describe(r.id);
      Status s = internal::AppendEntries((*replies)[k], what, stored);
      if (s.ok()) s = internal::AppendEntries((*replies)[k + 1], what, top);
      k += 2;
      if (!s.ok()) {
        out[c->index] = s;
      } else if (stored.size() == 1 && *stored[0].turn == std::string_view(records).substr(c->turn_at, c->turn_size)) {
        out[c->index] = Status::Ok();  // a retry: this very turn is already there
      } else {
        out[c->index] = Conflict(r, top.empty() ? "0" : std::to_string(top[0].version));
      }
    }
    for (const Pending* c : above_gap) {
      const CommitRequest& r = batch[c->index];
      Status undone = !replies ? replies.error()
                      : (*replies)[k + 3].is_array() ? Status::Ok()
                                                     : Status::Internal("commit " + Describe(r.id) +
                                                                        ": could not take back a turn above a gap: " +
                                                                        (*replies)[k + 3].Describe());
      k += 4;
      out[c->index] = undone.ok() ? Conflict(r, std::to_string(std::max<int64_t>(c->length_before, 0))) : undone;
    }
  }

  // The head from an XREVRANGE key + - COUNT 1 reply.
  static Result<uint64_t> HeadOf(const Reply& reply, const std::string& what) {
    std::vector<StreamEntry> top;
    if (Status s = internal::AppendEntries(reply, what, top); !s.ok()) return s;
    return top.empty() ? uint64_t{0} : top[0].version;
  }

  // The state at `version` (nullopt: the head): the newest snapshot at or
  // below it and the turns after it, read newest first. The first page,
  // snapshot_every entries, holds a snapshot when the writers used this
  // store's snapshot_every; else pages grow until one is reached.
  Result<LedgerState> Read(const ConversationId& id, std::optional<uint64_t> version) {
    std::string key = internal::TurnStreamKey(id), what = "read " + Describe(id);
    std::string end = version ? internal::EntryId(*version) : "+";
    auto client = pool_.Take();
    std::deque<Reply> pages;  // the entries point into these
    std::vector<StreamEntry> entries;
    for (size_t count = options_.snapshot_every;; count = std::min<size_t>(count * 2, 1024)) {
      auto reply = client->Command({"XREVRANGE", key, end, "-", "COUNT", std::to_string(count)});
      if (!reply) return reply.error();
      pages.push_back(std::move(reply.value()));
      size_t before = entries.size();
      if (Status s = internal::AppendEntries(pages.back(), what, entries); !s.ok()) return s;
      if (before == 0 && version && (entries.empty() || entries[0].version != *version)) {
        auto head = client->Command({"XREVRANGE", key, "+", "-", "COUNT", "1"});
        if (!head) return head.error();
        auto h = HeadOf(*head, what);
        if (!h) return h.error();
        if (*h < *version) return NotFound(id, *version, *h);
        return Status::Corruption(what + ": version " + std::to_string(*version) + " is missing (head is " +
                                  std::to_string(*h) + ")");
      }
      if (entries.empty()) return LedgerState{};  // the head of a conversation never written
      if (Status s = internal::CheckContiguous(entries, true, what); !s.ok()) return s;
      for (size_t i = before; i < entries.size(); ++i) {
        if (entries[i].state != nullptr) {
          entries.resize(i + 1);
          return internal::Replay(entries, what);
        }
      }
      // Version 1, or the end of the stream without a snapshot (Corruption).
      if (entries.back().version == 1 || entries.size() - before < count) return internal::Replay(entries, what);
      end = "(" + internal::EntryId(entries.back().version);
    }
  }

  StoreOptions options_;
  std::string retention_ms_;
  internal::RedisPool pool_;
};

}  // namespace

Result<std::unique_ptr<Store>> OpenRedisStore(const RedisOptions& options, const Clock& /*clock*/) {
  // Retention is judged by the server's clock (PEXPIRE), so `clock` is not
  // consulted; it is accepted for parity with NewMemoryStore.
  auto endpoint = internal::ParseRedisUrl(options.url);
  if (!endpoint) return endpoint.error();
  auto store = std::make_unique<RedisStore>(std::move(endpoint.value()), options);
  if (Status s = store->Open(); !s.ok()) return s;
  return std::unique_ptr<Store>(std::move(store));
}

Result<std::unique_ptr<Store>> OpenStore(const std::string& url, StoreOptions options) {
  if (url.empty() || url == "memory") return NewMemoryStore(options);
  RedisOptions redis;
  redis.url = url;
  redis.store = options;
  return OpenRedisStore(redis);
}

}  // namespace taskledger
