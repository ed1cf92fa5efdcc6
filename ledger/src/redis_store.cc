// RedisStore: the Store on Redis 7 (see taskledger/ledger/redis_store.h and
// docs/redis-keys.md). A commit is one FCALL of tl_commit (first and snapshot
// turns) or one MULTI / tl_advance / HSETNX / EXEC transaction (every other
// turn, so the payload never passes through Lua); a batch is one pipeline of
// them. Reads of any version are one FCALL of tl_read. Records are the
// codec's JSON documents serialised as CBOR (compact, fast, and byte-exact
// for any string the caller stored, valid UTF-8 or not), written directly
// from the structs (internal/redis_records.h).
//
// Thread-safe: every call leases its own connection from a RedisPool.
#include "taskledger/ledger/redis_store.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "internal/redis_client.h"
#include "internal/redis_functions.h"
#include "internal/redis_keys.h"
#include "internal/redis_pool.h"
#include "internal/redis_records.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/ledger/memory_store.h"

namespace taskledger {
namespace {

using internal::Argv;
using internal::Reply;

const internal::FunctionLibrary& Library() { return internal::LedgerFunctionLibrary(); }

std::string Describe(const ConversationId& id) { return id.tenant + "/" + id.conversation; }

Result<nlohmann::json> Deserialize(const std::string& bytes, const std::string& what) {
  auto j = nlohmann::json::from_cbor(bytes, /*strict=*/true, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Corruption(what + ": undecodable record");
  return j;
}

std::optional<uint64_t> ParseVersion(const Reply& r) {
  if (r.is_integer()) return r.integer() >= 0 ? std::optional<uint64_t>(r.integer()) : std::nullopt;
  const std::string& s = r.str();
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

Status NotFound(const ConversationId& id, uint64_t version, uint64_t head) {
  return Status::NotFound("conversation '" + Describe(id) + "' has no version " +
                          std::to_string(version) + " (head is " + std::to_string(head) + ")");
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

  Status Open() { return pool_.Take()->EnsureLoaded(Library()); }

  Status CommitTurn(const ConversationId& id, const TurnRecord& turn,
                    const LedgerState& after) override {
    CommitRequest request{id, &turn, &after};
    return CommitTurns(std::span<const CommitRequest>(&request, 1)).front();
  }

  // Every commit of the batch goes out in one pipeline; see docs/redis-keys.md
  // ("Commit protocol") for the two forms a commit takes.
  std::vector<Status> CommitTurns(std::span<const CommitRequest> batch) override {
    std::vector<Status> out(batch.size());
    std::vector<Commit> commits;
    commits.reserve(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      auto commit = MakeCommit(batch[i], i);
      if (!commit) {
        out[i] = commit.error();
        continue;
      }
      commits.push_back(std::move(commit.value()));
    }
    if (commits.empty()) return out;
    auto client = pool_.Take();
    std::vector<Commit*> all;
    for (Commit& c : commits) all.push_back(&c);
    if (Status s = Send(*client, all); !s.ok()) {
      for (const Commit& c : commits) out[c.index] = s;
      return out;
    }
    // A missing function ran nothing (a debris turn field at most, which the
    // next tl_advance removes): load the library and send those once more.
    std::vector<Commit*> again;
    for (Commit& c : commits) {
      if (internal::IsFunctionNotFound(c.reply)) again.push_back(&c);
    }
    if (!again.empty()) {
      auto loaded = client->Command({"FUNCTION", "LOAD", "REPLACE", Library().source});
      Status s = !loaded ? loaded.error()
                 : loaded->is_error() ? internal::ServerErrorToStatus(*loaded, "FUNCTION LOAD " + Library().name)
                                      : Send(*client, again);
      if (!s.ok()) {
        for (Commit* c : again) out[c->index] = s;
      }
    }
    RecogniseLanded(*client, commits, out);
    for (const Commit& c : commits) {
      if (out[c.index].ok()) out[c.index] = CommitOutcome(c.reply, batch[c.index]);
    }
    return out;
  }

  Result<uint64_t> Head(const ConversationId& id) override {
    auto reply = pool_.Take()->Command({"GET", internal::LedgerKeysFor(id).head});
    if (!reply) return reply.error();
    if (reply->is_nil()) return uint64_t{0};
    if (reply->is_error()) return internal::ServerErrorToStatus(*reply, "head of " + Describe(id));
    auto v = ParseVersion(*reply);
    if (!v) return Status::Corruption("head of " + Describe(id) + ": " + reply->Describe());
    return *v;
  }

  Result<LedgerState> ReadVersion(const ConversationId& id, uint64_t version) override {
    return Read(id, std::to_string(version));
  }

  Result<LedgerState> ReadHead(const ConversationId& id) override { return Read(id, ""); }

  Result<std::vector<TurnRecord>> ReadTurns(const ConversationId& id, uint64_t first,
                                            uint64_t last) override {
    first = std::max<uint64_t>(first, 1);
    auto keys = internal::LedgerKeysFor(id);
    std::vector<Argv> commands = {{"GET", keys.head}};
    if (first <= last) {
      Argv hmget = {"HMGET", keys.turns};
      for (uint64_t v = first; v <= last; ++v) hmget.push_back(std::to_string(v));
      commands.push_back(std::move(hmget));
    }
    auto replies = pool_.Take()->Pipeline(commands);
    if (!replies) return replies.error();
    for (const Reply& r : *replies) {
      if (r.is_error()) return internal::ServerErrorToStatus(r, "turns of " + Describe(id));
    }
    uint64_t head = 0;
    if (!(*replies)[0].is_nil()) {
      auto h = ParseVersion((*replies)[0]);
      if (!h) return Status::Corruption("head of " + Describe(id) + ": " + (*replies)[0].Describe());
      head = *h;
    }
    if (last > head) return NotFound(id, last, head);
    std::vector<TurnRecord> turns;
    if (first > last) return turns;
    const auto& payloads = (*replies)[1].elements();
    for (size_t k = 0; k < payloads.size(); ++k) {
      auto turn = DecodeStoredTurn(id, first + k, payloads[k]);
      if (!turn) return turn.error();
      turns.push_back(std::move(turn.value()));
    }
    return turns;
  }

  Result<std::vector<std::string>> ListConversations(const std::string& tenant) override {
    std::set<std::string> found;  // SCAN may return a key more than once
    std::string cursor = "0";
    auto client = pool_.Take();
    // ACL key patterns do not filter what SCAN returns, so first touch a key
    // under the tenant's own prefix: a user whose ACL excludes that tenant
    // gets NOPERM here and sees no conversation names.
    std::string probe = internal::TenantHeadPattern(tenant);
    probe.resize(probe.find(':', probe.find('{')) + 1);
    auto allowed = client->Command({"EXISTS", probe});
    if (!allowed) return allowed.error();
    if (allowed->is_error()) return internal::ServerErrorToStatus(*allowed, "list conversations of " + tenant);
    do {
      auto reply = client->Command(
          {"SCAN", cursor, "MATCH", internal::TenantHeadPattern(tenant), "COUNT", "1000", "TYPE", "string"});
      if (!reply) return reply.error();
      if (reply->is_error()) return internal::ServerErrorToStatus(*reply, "list conversations of " + tenant);
      if (reply->elements().size() != 2) return Status::Internal("SCAN: unexpected " + reply->Describe());
      cursor = reply->elements()[0].str();
      for (const Reply& key : reply->elements()[1].elements()) {
        if (auto conversation = internal::ConversationOfHeadKey(key.str(), tenant)) {
          found.insert(std::move(*conversation));
        }
      }
    } while (cursor != "0");
    return std::vector<std::string>(found.begin(), found.end());
  }

  Status DropConversation(const ConversationId& id) override {
    auto keys = internal::LedgerKeysFor(id);
    auto reply = pool_.Take()->Command({"DEL", keys.head, keys.turns, keys.snaps, keys.snap_index});
    if (!reply) return reply.error();
    if (reply->is_error()) return internal::ServerErrorToStatus(*reply, "drop " + Describe(id));
    return Status::Ok();
  }

 private:
  // One commit on the wire: either FCALL tl_commit carrying the turn (and
  // snapshot) through Lua, or, for a turn after the first without a
  // snapshot, MULTI / FCALL tl_advance / HSETNX turns next payload / EXEC, so
  // that the payload never enters Lua. `reply` is tl_commit's or tl_advance's.
  struct Commit {
    size_t index = 0;            // in the batch
    std::vector<Argv> commands;  // 1 (tl_commit) or 4 (the transaction)
    Reply reply;
    bool fast() const { return commands.size() == 4; }
    const std::string& turns_key() const { return commands[1][4]; }
    const std::string& next() const { return commands[1][8]; }
    const std::string& payload() const { return commands[2][3]; }
  };

  // InvalidArgument for a malformed request.
  Result<Commit> MakeCommit(const CommitRequest& r, size_t index) const {
    if (r.turn == nullptr || r.after == nullptr) return Status::InvalidArgument("commit: missing turn or state");
    const TurnRecord& turn = *r.turn;
    if (turn.turn == 0 || r.after->version != turn.turn) {
      return Status::InvalidArgument("commit " + Describe(r.id) +
                                     ": the state after the turn must carry its version");
    }
    auto keys = internal::LedgerKeysFor(r.id);
    Commit c;
    c.index = index;
    std::string base = std::to_string(turn.turn - 1), next = std::to_string(turn.turn);
    // The codec's CBOR, written without building the JSON DOM (the
    // dominant client-side cost of a commit otherwise).
    std::string payload = internal::TurnRecordBytes(turn);
    bool snapshot = turn.turn % options_.snapshot_every == 0;
    if (turn.turn == 1 || snapshot) {
      c.commands.push_back({"FCALL", "tl_commit", "4", std::move(keys.head), std::move(keys.turns),
                            std::move(keys.snaps), std::move(keys.snap_index), std::move(base), std::move(next),
                            std::move(payload), snapshot ? internal::StateRecordBytes(*r.after) : "",
                            retention_ms_});
      return c;
    }
    std::string turns = keys.turns;
    c.commands.push_back({"MULTI"});
    c.commands.push_back({"FCALL", "tl_advance", "4", std::move(keys.head), std::move(keys.turns),
                          std::move(keys.snaps), std::move(keys.snap_index), std::move(base), next, retention_ms_});
    c.commands.push_back({"HSETNX", std::move(turns), std::move(next), std::move(payload)});
    c.commands.push_back({"EXEC"});
    return c;
  }

  // Sends `commits` in one pipeline and stores each one's function reply
  // (a queueing or EXEC error stands in for it when the transaction failed).
  static Status Send(internal::RedisClient& client, const std::vector<Commit*>& commits) {
    std::vector<Argv> commands;
    for (const Commit* c : commits) commands.insert(commands.end(), c->commands.begin(), c->commands.end());
    auto replies = client.Pipeline(commands);
    if (!replies) return replies.error();
    size_t k = 0;
    for (Commit* c : commits) {
      if (!c->fast()) {
        c->reply = std::move((*replies)[k++]);
        continue;
      }
      const Reply* first_error = nullptr;
      for (size_t j = 0; j < 4; ++j) {
        if ((*replies)[k + j].is_error() && first_error == nullptr) first_error = &(*replies)[k + j];
      }
      const Reply& exec = (*replies)[k + 3];
      if (exec.is_array() && exec.elements().size() == 2) {
        c->reply = exec.elements()[0];
      } else {
        c->reply = first_error ? *first_error : Reply::Error("ERR transaction: unexpected " + exec.Describe());
      }
      k += 4;
    }
    return Status::Ok();
  }

  // A transaction commit answered CONFLICT at exactly its own version may be
  // a retry of a turn that already landed: it is, if the stored record is
  // byte for byte this payload (what tl_commit checks in Lua).
  // If that check cannot be made, those commits get its transport error.
  static void RecogniseLanded(internal::RedisClient& client, std::vector<Commit>& commits,
                              std::vector<Status>& out) {
    std::vector<Commit*> suspects;
    std::vector<Argv> reads;
    for (Commit& c : commits) {
      if (c.fast() && c.reply.is_error() && c.reply.str() == "CONFLICT " + c.next()) {
        suspects.push_back(&c);
        reads.push_back({"HGET", c.turns_key(), c.next()});
      }
    }
    if (suspects.empty()) return;
    auto stored = client.Pipeline(reads);
    for (size_t k = 0; k < suspects.size(); ++k) {
      if (!stored) {
        out[suspects[k]->index] = stored.error();
        continue;
      }
      const Reply& r = (*stored)[k];
      if (r.is_string() && r.str() == suspects[k]->payload()) suspects[k]->reply = Reply::Integer(0);
    }
  }

  static Status CommitOutcome(const Reply& reply, const CommitRequest& r) {
    if (reply.is_integer() && (reply.integer() == 1 || reply.integer() == 0)) return Status::Ok();
    if (reply.is_error() && reply.str().starts_with("CONFLICT ")) {
      return Status::Conflict("conversation '" + Describe(r.id) + "' is at version " +
                              reply.str().substr(9) + "; this turn was built on version " +
                              std::to_string(r.turn->turn - 1));
    }
    if (reply.is_error()) return internal::ServerErrorToStatus(reply, "commit " + Describe(r.id));
    return Status::Internal("commit " + Describe(r.id) + ": unexpected reply " + reply.Describe());
  }

  // tl_read of `version` ("" = head) rebuilt into a state.
  Result<LedgerState> Read(const ConversationId& id, const std::string& version) {
    auto keys = internal::LedgerKeysFor(id);
    auto replies = pool_.Take()->FCallPipeline(
        Library(), {{"FCALL", "tl_read", "4", keys.head, keys.turns, keys.snaps, keys.snap_index, version}});
    if (!replies) return replies.error();
    const Reply& reply = replies->front();
    std::string what = "read " + Describe(id);
    if (reply.is_error()) return internal::ServerErrorToStatus(reply, what);
    const auto& parts = reply.elements();
    if (parts.empty()) return Status::Internal(what + ": unexpected reply " + reply.Describe());
    auto head = ParseVersion(parts[0]);
    if (!head) return Status::Corruption(what + ": bad head " + parts[0].Describe());
    if (parts.size() == 1) return NotFound(id, ParseVersion(Reply::String(version)).value_or(0), *head);
    if (parts.size() < 4) return Status::Internal(what + ": unexpected reply " + reply.Describe());
    auto want = ParseVersion(parts[1]);
    auto snap_version = ParseVersion(parts[2]);
    if (!want || !snap_version || *snap_version > *want ||
        parts.size() != 4 + (*want - *snap_version)) {
      return Status::Corruption(what + ": inconsistent snapshot/turn reply");
    }
    LedgerState state;
    if (*snap_version > 0) {
      auto j = Deserialize(parts[3].str(), what + " snapshot " + std::to_string(*snap_version));
      if (!j) return j.error();
      auto decoded = DecodeState(*j);
      if (!decoded) return decoded.error();
      state = std::move(decoded.value());
      if (state.version != *snap_version) return Status::Corruption(what + ": snapshot version mismatch");
    }
    for (size_t k = 4; k < parts.size(); ++k) {
      auto turn = DecodeStoredTurn(id, *snap_version + (k - 3), parts[k]);
      if (!turn) return turn.error();
      if (Status s = ApplyTurn(state, *turn); !s.ok()) {
        return Status::Corruption(what + ": replaying turn " + std::to_string(turn->turn) + ": " + s.message());
      }
    }
    return state;
  }

  static Result<TurnRecord> DecodeStoredTurn(const ConversationId& id, uint64_t version, const Reply& payload) {
    std::string what = "turn " + std::to_string(version) + " of " + Describe(id);
    if (!payload.is_string() || payload.str().empty()) return Status::Corruption(what + ": missing");
    auto j = Deserialize(payload.str(), what);
    if (!j) return j.error();
    auto turn = DecodeTurn(*j);
    if (!turn) return turn.error();
    if (turn->turn != version) return Status::Corruption(what + ": records turn " + std::to_string(turn->turn));
    return turn;
  }

  StoreOptions options_;
  std::string retention_ms_ = "0";
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
