// RedisCommandStore: CommandStore on Redis 7. A command is one hash: its
// immutable part (spec: the JSON record at reservation) plus one field per
// mutable attribute, which the transition functions read and write. Every
// change is one FCALL into "taskledger_commands" (command_redis_functions.cc).
// On a Redis Cluster each call goes to the primary of its key's slot (the
// RedisRouter follows redirects): a run's keys share one hash tag, and the
// tenant's run index is a key of its own (another slot, so it cannot join
// tlc_reserve's FCALL). The store remembers the runs it has indexed: a write
// pays the index's round trip once per run and process, not once per call.
// Thread-safe: every call takes its own connection from the router's pools;
// the set of indexed runs has its own mutex.
#include "taskledger/commands/redis_command_store.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <mutex>
#include <set>

#include "internal/command_encoding.h"
#include "internal/command_redis_functions.h"
#include "taskledger/redis/client.h"
#include "taskledger/redis/router.h"

namespace taskledger {
namespace {

using internal::Argv;
using internal::Reply;
using Fields = std::map<std::string, std::string>;

std::string Json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

template <class T>
bool ParseNumber(const std::string& s, T& out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

Result<Fields> ToFields(const Reply& r, const std::string& what) {
  if (!r.is_array() || r.elements().size() % 2 != 0) {
    return Status::Corruption(what + ": expected a field list, got " + r.Describe());
  }
  Fields out;
  const auto& e = r.elements();
  for (size_t i = 0; i + 1 < e.size(); i += 2) out[e[i].str()] = e[i + 1].str();
  return out;
}

Result<Command> DecodeFields(const Fields& f) {
  auto spec_it = f.find("spec");
  if (spec_it == f.end()) return Status::Corruption("command hash has no spec");
  auto spec = nlohmann::json::parse(spec_it->second, nullptr, false);
  if (spec.is_discarded()) return Status::Corruption("command spec is not JSON");
  auto c = DecodeCommand(spec);
  if (!c) return c;
  auto text = [&](const char* name, std::string& out) {
    if (auto it = f.find(name); it != f.end()) out = it->second;
  };
  bool ok = true;
  auto number = [&](const char* name, auto& out) {
    if (auto it = f.find(name); it != f.end() && !it->second.empty()) {
      ok = ParseNumber(it->second, out) && ok;
    }
  };
  std::string state, evidence, escalated;
  text("state", state);
  number("seq", c->seq);
  number("attempts", c->attempts);
  number("fencing_token", c->fencing_token);
  text("lease_owner", c->lease_owner);
  number("lease_expires_ms", c->lease_expires_ms);
  text("last_error", c->last_error);
  text("external_id", c->external_id);
  text("evidence", evidence);
  text("approver", c->approver);
  text("approval_reason", c->approval_reason);
  text("escalated", escalated);
  text("escalation_reason", c->escalation_reason);
  text("cancel_reason", c->cancel_reason);
  number("replays", c->replays);
  text("replay_reason", c->replay_reason);
  number("completed_seq", c->completed_seq);
  number("created_ms", c->created_ms);
  number("updated_ms", c->updated_ms);
  if (!ok) return Status::Corruption("command " + c->command_key + " has a malformed number");
  auto parsed = ParseCommandState(state);
  if (!parsed) return Status::Corruption("command has unknown state '" + state + "'");
  c->state = *parsed;
  c->escalated = escalated == "1";
  if (!evidence.empty()) {
    c->evidence = nlohmann::json::parse(evidence, nullptr, false);
    if (c->evidence.is_discarded()) return Status::Corruption("command evidence is not JSON");
  }
  return c;
}

Result<RunRecord> DecodeRun(const RunId& id, const Fields& f) {
  RunRecord r;
  r.run = id;
  bool ok = true;
  auto number = [&](const char* name, auto& out) {
    if (auto it = f.find(name); it != f.end() && !it->second.empty()) {
      ok = ParseNumber(it->second, out) && ok;
    }
  };
  if (auto it = f.find("status"); it != f.end()) {
    auto s = ParseRunStatus(it->second);
    if (!s) return Status::Corruption("run has unknown status '" + it->second + "'");
    r.status = *s;
  }
  if (auto it = f.find("reason"); it != f.end()) r.reason = it->second;
  number("updated_ms", r.updated_ms);
  number("completed_seq", r.counters.completed_seq);
  number("replays", r.counters.replays);
  number("replay_window_start_ms", r.counters.replay_window_start_ms);
  number("replay_window_count", r.counters.replay_window_count);
  if (!ok) return Status::Corruption("run " + id.run + " has a malformed counter");
  return r;
}

Result<JournalEntry> DecodeJournal(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Corruption("journal entry is not JSON");
  JournalEntry e;
  try {
    e.position = j.at("position").get<uint64_t>();
    e.kind = j.at("kind").get<std::string>();
    e.request_hash = j.at("request_hash").get<std::string>();
    e.request = j.at("request");
    e.value = j.at("value");
  } catch (const std::exception& ex) {
    return Status::Corruption(std::string("journal entry: ") + ex.what());
  }
  return e;
}

class RedisCommandStore final : public CommandStore {
 public:
  RedisCommandStore(std::unique_ptr<internal::RedisRouter> router, const RedisOptions& options)
      : router_(std::move(router)), replicas_(options.replicas) {
    if (replicas_ > 0) {
      wait_ = {"WAIT", std::to_string(replicas_), std::to_string(options.replica_timeout.count())};
    }
  }

  Result<ReserveResult> Reserve(const Command& initial) override {
    return ReserveIn("tlc_reserve", initial, {});
  }

  Result<ReserveResult> ReserveAndLease(const Command& initial,
                                        const TransitionRequest& lease) override {
    if (lease.transition != Transition::kLease) {
      return Status::InvalidArgument("ReserveAndLease needs a lease request");
    }
    return ReserveIn("tlc_reserve_lease", initial,
                     {std::to_string(lease.now_ms), lease.owner, std::to_string(lease.lease_ms)});
  }

  Result<Command> Apply(const TransitionRequest& r) override {
    auto keys = internal::KeysOfRun(r.run);
    std::string function = "tlc_" + std::string(TransitionName(r.transition));
    auto reply =
        FCall(function, {keys.Command(r.command_key), keys.meta},
              {std::to_string(r.now_ms), std::to_string(r.fencing_token), r.owner,
               std::to_string(r.lease_ms), r.external_id,
               r.evidence.is_null() ? "" : Json(r.evidence), r.error, r.actor, r.reason,
               std::to_string(r.max_attempts), std::to_string(r.replay.max_attempts_per_command),
               std::to_string(r.replay.max_replays_per_run),
               std::to_string(r.replay.max_replays_per_window), std::to_string(r.replay.window_ms)},
              std::string(TransitionName(r.transition)) + " " + r.command_key);
    if (!reply) return reply.error();
    auto fields = ToFields(*reply, function);
    if (!fields) return fields.error();
    return DecodeFields(*fields);
  }

  Result<Command> Get(const RunId& run, std::string_view command_key) override {
    auto keys = internal::KeysOfRun(run);
    auto reply = Call({"HGETALL", keys.Command(command_key)}, "get");
    if (!reply) return reply.error();
    auto fields = ToFields(*reply, "get");
    if (!fields) return fields.error();
    if (fields->empty()) {
      return Status::NotFound("no command " + std::string(command_key) + " in run " + run.tenant +
                              "/" + run.run);
    }
    return DecodeFields(*fields);
  }

  Result<std::vector<Command>> ListCommands(const RunId& run) override {
    auto keys = internal::KeysOfRun(run);
    auto order = Call({"ZRANGE", keys.order, "0", "-1"}, "list");
    if (!order) return order.error();
    std::vector<Argv> gets;
    for (const Reply& key : order->elements()) gets.push_back({"HGETALL", keys.Command(key.str())});
    std::vector<Command> out;
    if (gets.empty()) return out;
    auto replies = router_->Pipeline(keys.order, gets);
    if (!replies) return replies.error();
    for (const Reply& r : *replies) {
      if (r.is_error()) return internal::CommandErrorToStatus(r, "list");
      auto fields = ToFields(r, "list");
      if (!fields) return fields.error();
      if (fields->empty()) continue;  // dropped concurrently
      auto c = DecodeFields(*fields);
      if (!c) return c.error();
      out.push_back(std::move(c).value());
    }
    return out;
  }

  Result<std::vector<std::string>> ListRuns(const std::string& tenant) override {
    auto reply = Call({"SMEMBERS", internal::RunsOfTenantKey(tenant)}, "list runs");
    if (!reply) return reply.error();
    std::vector<std::string> out;
    for (const Reply& r : reply->elements()) out.push_back(r.str());
    std::sort(out.begin(), out.end());
    return out;
  }

  Result<RunRecord> GetRun(const RunId& run) override {
    auto reply = Call({"HGETALL", internal::KeysOfRun(run).meta}, "get run");
    if (!reply) return reply.error();
    auto fields = ToFields(*reply, "get run");
    if (!fields) return fields.error();
    return DecodeRun(run, *fields);
  }

  Result<RunRecord> SetRunStatus(const RunId& run, std::vector<RunStatus> from, RunStatus to,
                                 const std::string& reason, int64_t now_ms) override {
    std::vector<std::string> args = {std::string(RunStatusName(to)), reason,
                                     std::to_string(now_ms)};
    for (RunStatus s : from) args.emplace_back(RunStatusName(s));
    auto reply = FCall("tlc_run_status", {internal::KeysOfRun(run).meta}, args,
                       "run " + run.run + " status");
    if (!reply) return reply.error();
    auto fields = ToFields(*reply, "run status");
    if (!fields) return fields.error();
    return DecodeRun(run, *fields);
  }

  Result<JournalEntry> PutJournalEntry(const RunId& run, const JournalEntry& entry) override {
    nlohmann::json j = {{"position", entry.position},
                        {"kind", entry.kind},
                        {"request_hash", entry.request_hash},
                        {"request", entry.request},
                        {"value", entry.value}};
    auto reply = FCall("tlc_journal_put", {internal::KeysOfRun(run).journal},
                       {std::to_string(entry.position), Json(j)}, "journal put");
    if (!reply) return reply.error();
    return DecodeJournal(reply->str());
  }

  Result<std::optional<JournalEntry>> GetJournalEntry(const RunId& run,
                                                      uint64_t position) override {
    auto reply =
        Call({"HGET", internal::KeysOfRun(run).journal, std::to_string(position)}, "journal get");
    if (!reply) return reply.error();
    if (reply->is_nil()) return std::optional<JournalEntry>();
    auto e = DecodeJournal(reply->str());
    if (!e) return e.error();
    return std::optional<JournalEntry>(std::move(e).value());
  }

  Status DropRun(const RunId& run) override {
    auto keys = internal::KeysOfRun(run);
    auto order = Call({"ZRANGE", keys.order, "0", "-1"}, "drop");
    if (!order) return order.error();
    Argv del = {"DEL", keys.meta, keys.order, keys.journal};
    for (const Reply& key : order->elements()) del.push_back(keys.Command(key.str()));
    auto deleted = Call(del, "drop");
    if (!deleted) return deleted.error();
    {
      std::lock_guard<std::mutex> lock(indexed_mu_);
      indexed_.erase(IndexedName(run));
    }
    return Call({"SREM", internal::RunsOfTenantKey(run.tenant), run.run}, "drop").status();
  }

 private:
  // tlc_reserve or tlc_reserve_lease (`lease_args` appended to the reserve's).
  Result<ReserveResult> ReserveIn(const std::string& function, const Command& initial,
                                  const std::vector<std::string>& lease_args) {
    auto keys = internal::KeysOfRun(initial.run);
    // Indexed first: a crash after this line leaves an indexed run with no
    // command, which ListRuns callers see as empty (never a lost command).
    const bool known = IndexedBefore(initial.run);
    if (!known) {
      if (Status s = Index(initial.run); !s.ok()) return s;
    }
    std::vector<std::string> args = {initial.command_key, Json(EncodeCommand(initial)),
                                     std::string(CommandStateName(initial.state)),
                                     std::to_string(initial.created_ms)};
    args.insert(args.end(), lease_args.begin(), lease_args.end());
    auto reply = FCall(function, {keys.Command(initial.command_key), keys.meta, keys.order}, args,
                       "reserve " + initial.command_key);
    if (!reply) return reply.error();
    const auto& e = reply->elements();
    const size_t size = lease_args.empty() ? 2 : 3;
    if (e.size() != size || !e[0].is_integer() || (size == 3 && !e[2].is_integer())) {
      return Status::Corruption("reserve: unexpected reply " + reply->Describe());
    }
    auto fields = ToFields(e[1], "reserve");
    if (!fields) return fields.error();
    auto c = DecodeFields(*fields);
    if (!c) return c.error();
    const bool created = e[0].integer() == 1;
    if (known && c->seq == 1 && created) {
      // The run's first command, yet this process had indexed the run: it was
      // dropped (here or by another process) since. Index it again; a crash
      // before this line leaves a run DropRun had already taken out of the index.
      if (Status s = Index(initial.run); !s.ok()) return s;
    }
    return ReserveResult{std::move(c).value(), created, size == 3 && e[2].integer() == 1};
  }

  // Runs this store has put into their tenant's index. Bounded: past
  // kMaxIndexed names it starts again (a forgotten run costs one SADD more).
  static constexpr size_t kMaxIndexed = 65536;

  static std::string IndexedName(const RunId& run) {
    return internal::PercentEncode(run.tenant) + ":" + internal::PercentEncode(run.run);
  }

  bool IndexedBefore(const RunId& run) {
    std::lock_guard<std::mutex> lock(indexed_mu_);
    return indexed_.count(IndexedName(run)) != 0;
  }

  Status Index(const RunId& run) {
    auto added = Call({"SADD", internal::RunsOfTenantKey(run.tenant), run.run}, "index run",
                      /*write=*/true);
    if (!added) return added.error();
    std::lock_guard<std::mutex> lock(indexed_mu_);
    if (indexed_.size() >= kMaxIndexed) indexed_.clear();
    indexed_.insert(IndexedName(run));
    return Status::Ok();
  }

  // REQUIRES: argv[1] is the (first) key. A `write` waits for replicas_
  // replicas (RedisOptions::replicas) like every FCall.
  Result<Reply> Call(const Argv& argv, const std::string& context, bool write = false) {
    if (!write || wait_.empty()) {
      auto reply = router_->Command(argv.at(1), argv);
      if (!reply) return reply.error();
      if (reply->is_error()) return internal::CommandErrorToStatus(*reply, context);
      return reply;
    }
    const std::vector<std::string_view> views(argv.begin(), argv.end());
    std::vector<Reply> waited;
    auto replies = router_->Batch(
        1, nullptr, [&](size_t) { return std::string_view(argv.at(1)); },
        [&](internal::RedisClient& client, size_t) { client.Queue(views); }, &wait_, &waited);
    if (!replies) return replies.error();
    if (replies->front().is_error()) {
      return internal::CommandErrorToStatus(replies->front(), context);
    }
    if (Status s = Replicated(waited.front(), context); !s.ok()) return s;
    return std::move(replies->front());
  }

  Status Replicated(const Reply& waited, const std::string& context) const {
    if (waited.is_integer() && waited.integer() >= static_cast<int64_t>(replicas_)) {
      return Status::Ok();
    }
    return Status::Unavailable(context + ": on the primary, but " + waited.Describe() + " of " +
                               std::to_string(replicas_) +
                               " replicas confirmed it in time (the same call again is safe)");
  }

  Result<Reply> FCall(const std::string& function, const std::vector<std::string>& keys,
                      const std::vector<std::string>& args, const std::string& context) {
    Reply waited;
    auto reply = router_->FCall(internal::CommandFunctionLibrary(), function, keys, args,
                                wait_.empty() ? nullptr : &wait_, &waited);
    if (!reply) return reply.error();
    if (reply->is_error()) return internal::CommandErrorToStatus(*reply, context);
    if (!wait_.empty()) {
      if (Status s = Replicated(waited, context); !s.ok()) return s;
    }
    return reply;
  }

  std::unique_ptr<internal::RedisRouter> router_;
  uint32_t replicas_;
  Argv wait_;  // WAIT replicas timeout; empty: no wait
  std::mutex indexed_mu_;
  std::set<std::string> indexed_;  // IndexedName of the runs indexed by this store
};

}  // namespace

Result<std::unique_ptr<CommandStore>> OpenRedisCommandStore(const RedisOptions& options) {
  RedisOptions effective = options;
  auto router = internal::OpenRedisRouter(effective, internal::CommandFunctionLibrary());
  if (!router) return router.error();
  return std::unique_ptr<CommandStore>(
      std::make_unique<RedisCommandStore>(std::move(router).value(), effective));
}

}  // namespace taskledger
