// RedisCommandStore (internal/command_redis_store_class.h): what is not a
// reservation or a transition: reads (Get, ListCommands, runs, the journal),
// DropRun, the reserve entry points (their work is ReserveIn,
// command_redis_reserve.cc), the calls every path makes (Call, FCall and the
// wait for replicas), and OpenRedisCommandStore. Thread-safe, as the class.
#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>

#include "internal/command_redis_decode.h"
#include "internal/command_redis_functions.h"
#include "internal/command_redis_store_class.h"
#include "taskledger/commands/redis_command_store.h"

namespace taskledger::internal {

Result<CommitReserveResult> RedisCommandStore::CommitReserveAndLease(
    const EncodedCommit& commit, const Command& initial, const TransitionRequest& lease) {
  if (carrier_id_.empty()) return CommandStore::CommitReserveAndLease(commit, initial, lease);
  return CommitReserveVia(commit, initial, lease, nullptr);
}

Result<CommitReserveResult> RedisCommandStore::CommitReserveVia(const EncodedCommit& commit,
                                                                const Command& initial,
                                                                const TransitionRequest& lease,
                                                                const Behind* behind) {
  const std::shared_ptr<const CommandKeys> keys = KeysOf(initial.run);
  const std::string& tag = keys->tag;
  const size_t open = commit.key.find('{');
  if (lease.transition != Transition::kLease || open == std::string_view::npos ||
      commit.key.substr(open, tag.size()) != tag) {
    return Status::InvalidArgument("commit + reserve + lease of " + initial.command_key +
                                   " needs a lease request and a turn key of the run's slot");
  }
  CommitReserveResult out;
  auto reserved = ReserveIn(
      behind != nullptr ? "tlc_commit_reserve_lease3" : "tlc_commit_reserve_lease2", initial,
      {std::to_string(lease.now_ms), lease.owner, std::to_string(lease.lease_ms)}, &commit,
      &out.commit, behind);
  if (!reserved) return reserved.error();
  out.reserve = std::move(reserved).value();
  return out;
}

Result<ReserveResult> RedisCommandStore::Reserve(const Command& initial) {
  return ReserveIn("tlc_reserve2", initial, {});
}

Result<ReserveResult> RedisCommandStore::ReserveAndLease(const Command& initial,
                                                         const TransitionRequest& lease) {
  if (lease.transition != Transition::kLease) {
    return Status::InvalidArgument("ReserveAndLease needs a lease request");
  }
  return ReserveIn("tlc_reserve_lease2", initial,
                   {std::to_string(lease.now_ms), lease.owner, std::to_string(lease.lease_ms)});
}

Result<Command> RedisCommandStore::Get(const RunId& run, std::string_view command_key) {
  auto keys = KeysOfRun(run);
  auto reply = Call({"HGETALL", keys.Command(command_key)}, "get");
  if (!reply) return reply.error();
  if (reply->is_array() && reply->elements().empty()) {
    return Status::NotFound("no command " + std::string(command_key) + " in run " + run.tenant +
                            "/" + run.run);
  }
  return DecodeHash(*reply, "get", nullptr);
}

Result<std::vector<Command>> RedisCommandStore::ListCommands(const RunId& run) {
  auto keys = KeysOfRun(run);
  auto order = Call({"ZRANGE", keys.order, "0", "-1"}, "list");
  if (!order) return order.error();
  std::vector<Argv> gets;
  for (const Reply& key : order->elements()) gets.push_back({"HGETALL", keys.Command(key.str())});
  std::vector<Command> out;
  if (gets.empty()) return out;
  auto replies = router_->Pipeline(keys.order, gets);
  if (!replies) return replies.error();
  for (const Reply& r : *replies) {
    if (r.is_error()) return CommandErrorToStatus(r, "list");
    if (r.is_array() && r.elements().empty()) continue;  // dropped concurrently
    auto c = DecodeHash(r, "list", nullptr);
    if (!c) return c.error();
    out.push_back(std::move(c).value());
  }
  return out;
}

Result<std::vector<std::string>> RedisCommandStore::ListRuns(const std::string& tenant) {
  auto reply = Call({"SMEMBERS", RunsOfTenantKey(tenant)}, "list runs");
  if (!reply) return reply.error();
  std::vector<std::string> out;
  for (const Reply& r : reply->elements()) out.push_back(r.str());
  std::sort(out.begin(), out.end());
  return out;
}

Result<RunRecord> RedisCommandStore::GetRun(const RunId& run) {
  auto reply = Call({"HGETALL", KeysOfRun(run).meta}, "get run");
  if (!reply) return reply.error();
  auto fields = ToFields(*reply, "get run");
  if (!fields) return fields.error();
  return DecodeRun(run, *fields);
}

Result<RunRecord> RedisCommandStore::SetRunStatus(const RunId& run, std::vector<RunStatus> from,
                                                  RunStatus to, const std::string& reason,
                                                  int64_t now_ms) {
  std::vector<std::string> args = {std::string(RunStatusName(to)), reason, std::to_string(now_ms)};
  for (RunStatus s : from) args.emplace_back(RunStatusName(s));
  auto reply = FCall("tlc_run_status", {KeysOfRun(run).meta}, args, "run " + run.run + " status");
  if (!reply) return reply.error();
  auto fields = ToFields(*reply, "run status");
  if (!fields) return fields.error();
  return DecodeRun(run, *fields);
}

Result<JournalEntry> RedisCommandStore::PutJournalEntry(const RunId& run,
                                                        const JournalEntry& entry) {
  nlohmann::json j = {{"position", entry.position},
                      {"kind", entry.kind},
                      {"request_hash", entry.request_hash},
                      {"request", entry.request},
                      {"value", entry.value}};
  auto reply = FCall("tlc_journal_put", {KeysOfRun(run).journal},
                     {std::to_string(entry.position), Json(j)}, "journal put");
  if (!reply) return reply.error();
  return DecodeJournal(reply->str());
}

Result<std::optional<JournalEntry>> RedisCommandStore::GetJournalEntry(const RunId& run,
                                                                       uint64_t position) {
  auto reply = Call({"HGET", KeysOfRun(run).journal, std::to_string(position)}, "journal get");
  if (!reply) return reply.error();
  if (reply->is_nil()) return std::optional<JournalEntry>();
  auto e = DecodeJournal(reply->str());
  if (!e) return e.error();
  return std::optional<JournalEntry>(std::move(e).value());
}

Status RedisCommandStore::DropRun(const RunId& run) {
  auto keys = KeysOfRun(run);
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
  return Call({"SREM", RunsOfTenantKey(run.tenant), run.run}, "drop").status();
}

Result<Reply> RedisCommandStore::Call(const Argv& argv, const std::string& context, bool write) {
  if (!write || wait_.empty()) {
    auto reply = router_->Command(argv.at(1), argv);
    if (!reply) return reply.error();
    if (reply->is_error()) return CommandErrorToStatus(*reply, context);
    return reply;
  }
  const std::vector<std::string_view> views(argv.begin(), argv.end());
  std::vector<Reply> waited;
  auto replies = router_->Batch(
      1, nullptr, [&](size_t) { return std::string_view(argv.at(1)); },
      [&](RedisClient& client, size_t) { client.Queue(views); }, &wait_, &waited);
  if (!replies) return replies.error();
  if (replies->front().is_error()) {
    return CommandErrorToStatus(replies->front(), context);
  }
  if (Status s = Replicated(waited.front(), context); !s.ok()) return s;
  return std::move(replies->front());
}

Status RedisCommandStore::Replicated(const Reply& waited, const std::string& context) const {
  if (waited.is_integer() && waited.integer() >= static_cast<int64_t>(replicas_)) {
    return Status::Ok();
  }
  return Status::Unavailable(context + ": on the primary, but " + waited.Describe() + " of " +
                             std::to_string(replicas_) +
                             " replicas confirmed it in time (the same call again is safe)");
}

Result<Reply> RedisCommandStore::FCall(const std::string& function,
                                       const std::vector<std::string>& keys,
                                       const std::vector<std::string>& args,
                                       const std::string& context) {
  Reply waited;
  auto reply = router_->FCall(CommandFunctionLibrary(), function, keys, args,
                              wait_.empty() ? nullptr : &wait_, &waited);
  if (!reply) return reply.error();
  if (reply->is_error()) return CommandErrorToStatus(*reply, context);
  if (!wait_.empty()) {
    if (Status s = Replicated(waited, context); !s.ok()) return s;
  }
  return reply;
}

}  // namespace taskledger::internal

namespace taskledger {

Result<std::unique_ptr<CommandStore>> OpenRedisCommandStore(const RedisOptions& options) {
  RedisOptions effective = options;
  auto router = internal::OpenRedisRouter(effective, internal::CommandFunctionLibrary());
  if (!router) return router.error();
  return std::unique_ptr<CommandStore>(
      std::make_unique<internal::RedisCommandStore>(std::move(router).value(), effective));
}

}  // namespace taskledger
