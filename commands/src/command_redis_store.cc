// RedisCommandStore: CommandStore on Redis 7. A command is one hash: its
// immutable part (spec: the JSON record at reservation; decision: a typed
// decision record's CBOR, the bytes its turn keeps, when not in the spec)
// plus one field per mutable attribute, which the transition functions read
// and write. Every
// change is one FCALL into "taskledger_commands" (command_redis_functions.cc).
// On a Redis Cluster each call goes to the primary of its key's slot (the
// RedisRouter follows redirects): a run's keys share one hash tag, and the
// tenant's run index is a key of its own (another slot, so it cannot join
// tlc_reserve's FCALL). The store remembers the runs it has indexed: a write
// pays the index's round trip once per run and process, not once per call.
// The write path avoids work per call: the spec text is written straight
// from the Command (internal::WriteCommandSpec), a reply holding the spec
// just sent decodes to that Command without parsing (other specs go through
// internal::SpecCache), hashes are decoded from the reply field by field,
// and a fenced transition of a command this store leased gets back only the
// fields it wrote, applied to the Command its lease left
// (internal::LeasedHashes). Thread-safe: every call takes its own connection
// from the router's pools; the set of indexed runs, the spec cache and the
// leased commands have their own mutexes.
#include "taskledger/commands/redis_command_store.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>

#include "internal/command_encoding.h"
#include "internal/command_redis_decode.h"
#include "internal/command_redis_functions.h"
#include "internal/command_spec_text.h"
#include "taskledger/commands/command_transition.h"
#include "taskledger/commands/deferred_transition.h"
#include "taskledger/redis/client.h"
#include "taskledger/redis/router.h"

namespace taskledger {
namespace {

using internal::Argv;
using internal::DecodeHash;
using internal::DecodeJournal;
using internal::DecodeRun;
using internal::Reply;
using internal::ToFields;

std::string Json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

class RedisCommandStore final : public CommandStore, public DeferringCommandStore {
 public:
  RedisCommandStore(std::unique_ptr<internal::RedisRouter> router, const RedisOptions& options)
      : router_(std::move(router)), replicas_(options.replicas) {
    if (replicas_ > 0) {
      wait_ = {"WAIT", std::to_string(replicas_), std::to_string(options.replica_timeout.count())};
    } else {
      carrier_id_ = "redis " + options.url;  // as RedisStore's CommitCarrierId
    }
  }

  std::string TurnCommitCarrierId() const override { return carrier_id_; }

  Result<CommitReserveResult> CommitReserveAndLease(const EncodedCommit& commit,
                                                    const Command& initial,
                                                    const TransitionRequest& lease) override {
    if (carrier_id_.empty()) return CommandStore::CommitReserveAndLease(commit, initial, lease);
    const std::string tag = internal::KeysOfRun(initial.run).tag;
    const size_t open = commit.key.find('{');
    if (lease.transition != Transition::kLease || open == std::string_view::npos ||
        commit.key.substr(open, tag.size()) != tag) {
      return Status::InvalidArgument("commit + reserve + lease of " + initial.command_key +
                                     " needs a lease request and a turn key of the run's slot");
    }
    CommitReserveResult out;
    auto reserved =
        ReserveIn("tlc_commit_reserve_lease2", initial,
                  {std::to_string(lease.now_ms), lease.owner, std::to_string(lease.lease_ms)},
                  &commit, &out.commit);
    if (!reserved) return reserved.error();
    out.reserve = std::move(reserved).value();
    return out;
  }

  Result<ReserveResult> Reserve(const Command& initial) override {
    return ReserveIn("tlc_reserve2", initial, {});
  }

  Result<ReserveResult> ReserveAndLease(const Command& initial,
                                        const TransitionRequest& lease) override {
    if (lease.transition != Transition::kLease) {
      return Status::InvalidArgument("ReserveAndLease needs a lease request");
    }
    return ReserveIn("tlc_reserve_lease2", initial,
                     {std::to_string(lease.now_ms), lease.owner, std::to_string(lease.lease_ms)});
  }

  // A fenced transition of a command this store leased asks for the fields it
  // writes only and applies them to the command its lease left (LeasedHashes):
  // the reply then carries no spec. A full reply (a library that does not
  // answer deltas) applies the same way.
  Result<Command> Apply(const TransitionRequest& r) override {
    Transit t = Prepare(r);
    Reply waited;
    auto reply = router_->FCall(internal::CommandFunctionLibrary(), t.function, t.keys, t.args,
                                wait_.empty() ? nullptr : &wait_, &waited);
    if (reply && !wait_.empty() && !reply->is_error()) {
      if (Status s = Replicated(waited, t.context); !s.ok()) return s;
    }
    return Finish(t, std::move(reply));
  }

  // Apply's FCALL sent now and read at Wait(); applied at once when a WAIT
  // for replicas must follow it (the wait is the point of such a store).
  std::unique_ptr<PendingTransition> SendTransition(const TransitionRequest& r) override;

  Result<Command> Get(const RunId& run, std::string_view command_key) override {
    auto keys = internal::KeysOfRun(run);
    auto reply = Call({"HGETALL", keys.Command(command_key)}, "get");
    if (!reply) return reply.error();
    if (reply->is_array() && reply->elements().empty()) {
      return Status::NotFound("no command " + std::string(command_key) + " in run " + run.tenant +
                              "/" + run.run);
    }
    return DecodeHash(*reply, "get", nullptr);
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
      if (r.is_array() && r.elements().empty()) continue;  // dropped concurrently
      auto c = DecodeHash(r, "list", nullptr);
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
  // One transition's FCALL and what its reply is applied to.
  struct Transit {
    std::string key, function, context;
    std::vector<std::string> keys, args;
    std::optional<Command> base;  // the command as this store leased it, when fenced
  };

  Transit Prepare(const TransitionRequest& r) {
    auto run_keys = internal::KeysOfRun(r.run);
    Transit t;
    t.key = run_keys.Command(r.command_key);
    t.function = "tlc_" + std::string(TransitionName(r.transition));
    t.context = std::string(TransitionName(r.transition)) + " " + r.command_key;
    if (TransitionNeedsFencingToken(r.transition)) t.base = leased_.Take(t.key, r.fencing_token);
    t.keys = {t.key, run_keys.meta};
    t.args = {std::to_string(r.now_ms),
              std::to_string(r.fencing_token),
              r.owner,
              std::to_string(r.lease_ms),
              r.external_id,
              r.evidence.is_null() ? "" : Json(r.evidence),
              r.error,
              r.actor,
              r.reason,
              std::to_string(r.max_attempts),
              std::to_string(r.replay.max_attempts_per_command),
              std::to_string(r.replay.max_replays_per_run),
              std::to_string(r.replay.max_replays_per_window),
              std::to_string(r.replay.window_ms),
              t.base ? "delta" : ""};
    return t;
  }

  // The record after transition `t` from its FCALL's reply.
  Result<Command> Finish(Transit& t, Result<Reply> reply) {
    if (!reply) return reply.error();
    if (reply->is_error()) return internal::CommandErrorToStatus(*reply, t.context);
    if (t.base) {
      if (Status s = internal::ApplyHashFields(*reply, t.function, *t.base); !s.ok()) return s;
      leased_.Update(t.key, *t.base);
      return std::move(*t.base);
    }
    auto c = DecodeHash(*reply, t.function, &specs_);
    if (c) leased_.Update(t.key, *c);
    return c;
  }

  friend class SentTransition;

  // tlc_reserve2 or tlc_reserve_lease2 (`lease_args` appended to the
  // reserve's), or with `commit` tlc_commit_reserve_lease2 (its key and
  // arguments first; the commit's outcome in *carried, a refusal of it is no
  // error here). A typed decision goes in the hash's own field as its CBOR
  // (WriteDecisionApart), and with a commit as a reference to the same bytes
  // inside the turn sent (one copy on the wire); any other stays in the spec.
  Result<ReserveResult> ReserveIn(const std::string& function, const Command& initial,
                                  const std::vector<std::string>& lease_args,
                                  const EncodedCommit* commit = nullptr,
                                  CarriedCommit* carried = nullptr) {
    auto keys = internal::KeysOfRun(initial.run);
    // Indexed first: a crash after this line leaves an indexed run with no
    // command, which ListRuns callers see as empty (never a lost command).
    const bool known = IndexedBefore(initial.run);
    if (!known) {
      if (Status s = Index(initial.run); !s.ok()) return s;
    }
    // The spec as sent, compact and without a JSON tree. When that text reads
    // back exactly (`lossless`), a reply holding the same text and decision
    // (not another writer's earlier reservation) decodes to `initial` itself
    // instead of being parsed.
    std::string spec_text, decision;
    const bool apart = internal::WriteDecisionApart(initial.decision, decision);
    const bool lossless =
        internal::WriteCommandSpec(initial, internal::SpecSpelling::kCompact, spec_text, apart);
    if (!lossless) {
      spec_text = Json(EncodeCommand(initial));  // the decision in it, replaced as the spec
      decision.clear();
    }
    std::vector<std::string> args, fkeys;
    const size_t spec_at = commit != nullptr ? 5 : 1;  // spec_text's place in args
    if (commit != nullptr) {
      args = {std::string(commit->base), std::string(commit->retention), std::string(commit->turn),
              std::string(commit->snapshot)};
      fkeys.emplace_back(commit->key);
    }
    args.insert(args.end(),
                {initial.command_key, std::move(spec_text),
                 std::string(CommandStateName(initial.state)), std::to_string(initial.created_ms)});
    args.insert(args.end(), lease_args.begin(), lease_args.end());
    const size_t at = commit != nullptr && !decision.empty() ? commit->turn.find(decision)
                                                             : std::string_view::npos;
    if (commit == nullptr) {
      args.push_back(decision);
    } else if (at == std::string_view::npos) {
      args.insert(args.end(), {decision, "", ""});
    } else {  // the turn holds these very bytes: refer to them
      args.insert(args.end(), {"", std::to_string(at), std::to_string(decision.size())});
    }
    fkeys.insert(fkeys.end(), {keys.Command(initial.command_key), keys.meta, keys.order});
    auto reply = commit == nullptr ? FCall(function, fkeys, args, "reserve " + initial.command_key)
                                   : CarryingFCall(function, fkeys, args, initial, *carried);
    if (!reply) return reply.error();
    if (commit != nullptr && !carried->refusal.empty()) return ReserveResult{};
    const auto& e = reply->elements();
    const size_t size = commit != nullptr ? 4 : lease_args.empty() ? 2 : 3;
    if (e.size() != size || !e[0].is_integer() || (size >= 3 && !e[2].is_integer()) ||
        (size == 4 && !e[3].is_integer())) {
      return Status::Corruption("reserve: unexpected reply " + reply->Describe());
    }
    if (commit != nullptr) carried->committed = e[3].integer() > 0;
    const bool leased = size >= 3 && e[2].integer() == 1;
    const bool created = e[0].integer() == 1;
    bool sent = false;  // the reply's spec is the one sent
    Result<Command> c = Status::Internal("reserve: not decoded");
    if (created && leased) {
      // Written as sent, then leased: the reply holds the fields from state
      // on only (the spec and decision are those sent; stored verbatim).
      c = lossless ? Result<Command>(initial) : specs_.Decode(args[spec_at], decision);
      if (c) {
        if (Status s = internal::ApplyHashFields(e[1], "reserve", *c); !s.ok()) return s;
      }
    } else {
      c = DecodeHash(e[1], "reserve",
                     [&](const std::string& spec, std::string_view stored) -> Result<Command> {
                       sent = lossless && spec == args[spec_at] && stored == decision;
                       return sent ? initial : specs_.Decode(spec, stored);
                     });
    }
    if (!c) return c.error();
    if (leased) {
      leased_.Update(keys.Command(initial.command_key), *c);
    } else {
      leased_.Forget(keys.Command(initial.command_key));
      // Its lease, if it comes, is a transition whose reply holds this spec.
      if (sent) specs_.Remember(args[spec_at], std::move(decision), initial);
    }
    if (known && c->seq == 1 && created) {
      // The run's first command, yet this process had indexed the run: it was
      // dropped (here or by another process) since. Index it again; a crash
      // before this line leaves a run DropRun had already taken out of the index.
      if (Status s = Index(initial.run); !s.ok()) return s;
    }
    return ReserveResult{std::move(c).value(), created, leased};
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

  // The FCALL of tlc_commit_reserve_lease2 (no replicas to wait for: only a
  // store without them carries commits): the commit's refusals (tl_commit's
  // error replies) go to carried.refusal, the reply stays a value.
  Result<Reply> CarryingFCall(const std::string& function, const std::vector<std::string>& keys,
                              const std::vector<std::string>& args, const Command& initial,
                              CarriedCommit& carried) {
    auto reply =
        router_->FCall(internal::CommandFunctionLibrary(), function, keys, args, nullptr, nullptr);
    if (!reply) return reply.error();
    if (!reply->is_error()) return reply;
    const std::string& text = reply->str();
    for (std::string_view refusal : {"TLCONFLICT ", "TLGONE", "TLCORRUPT ", "ERR tl_commit"}) {
      if (text.rfind(refusal, 0) == 0) {
        carried.refusal = text;
        return reply;
      }
    }
    return internal::CommandErrorToStatus(*reply, "commit + reserve " + initial.command_key);
  }

  std::unique_ptr<internal::RedisRouter> router_;
  std::string carrier_id_;  // TurnCommitCarrierId()
  uint32_t replicas_;
  Argv wait_;  // WAIT replicas timeout; empty: no wait
  std::mutex indexed_mu_;
  std::set<std::string> indexed_;  // IndexedName of the runs indexed by this store
  internal::SpecCache specs_;  // the last command spec decoded (a write's reserve, then its settle)
  internal::LeasedHashes leased_;  // the commands this store leased, as their lease left them
};

// A transition already answered (applied at once): its record or its error.
class AnsweredTransition final : public PendingTransition {
 public:
  explicit AnsweredTransition(Result<Command> result) {
    if (result) {
      command_ = std::move(result).value();
    } else {
      error_ = result.error();
    }
  }
  Result<Command> Wait() override {
    if (waited_) return Status::FailedPrecondition("the transition was read already");
    waited_ = true;
    if (!command_) return error_;
    return std::move(*command_);
  }

 private:
  std::optional<Command> command_;
  Status error_;
  bool waited_ = false;
};

// A transition whose FCALL is on the wire; the reply is read by Wait() (or
// by the DeferredReply's destructor, and then dropped).
class SentTransition final : public PendingTransition {
 public:
  SentTransition(RedisCommandStore& store, RedisCommandStore::Transit transit,
                 internal::DeferredReply reply)
      : store_(store), transit_(std::move(transit)), reply_(std::move(reply)) {}
  Result<Command> Wait() override {
    if (waited_) return Status::FailedPrecondition(transit_.context + " was read already");
    waited_ = true;
    return store_.Finish(transit_, reply_.Wait());
  }

 private:
  RedisCommandStore& store_;
  RedisCommandStore::Transit transit_;
  internal::DeferredReply reply_;
  bool waited_ = false;
};

std::unique_ptr<PendingTransition> RedisCommandStore::SendTransition(const TransitionRequest& r) {
  if (!wait_.empty()) return std::make_unique<AnsweredTransition>(Apply(r));
  Transit t = Prepare(r);
  internal::DeferredReply reply =
      router_->SendFCall(internal::CommandFunctionLibrary(), t.function, t.keys, t.args);
  return std::make_unique<SentTransition>(*this, std::move(t), std::move(reply));
}

}  // namespace

Result<std::unique_ptr<CommandStore>> OpenRedisCommandStore(const RedisOptions& options) {
  RedisOptions effective = options;
  auto router = internal::OpenRedisRouter(effective, internal::CommandFunctionLibrary());
  if (!router) return router.error();
  return std::unique_ptr<CommandStore>(
      std::make_unique<RedisCommandStore>(std::move(router).value(), effective));
}

}  // namespace taskledger
