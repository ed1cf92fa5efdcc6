// CommandLedger, the execution half: reserve, lease, call, record the outcome,
// reconcile uncertain commands, and the startup guard. Approvals, replay and
// compensation live in command_ledger_controls.cc. Every state change is one
// store transition, so a crash between any two lines leaves a record that
// Recover can finish from.
#include <exception>
#include <utility>

#include "taskledger/commands/command_ledger.h"
#include "taskledger/commands/deferred_transition.h"

namespace taskledger {

CommandLedger::CommandLedger(CommandStore& store, const Clock& clock, CommandLedgerOptions options)
    : store_(store), clock_(clock), options_(std::move(options)) {}

void CommandLedger::Bind(std::string tool, ToolBinding binding) {
  tools_[std::move(tool)] = std::move(binding);
}

const ToolBinding* CommandLedger::BindingOf(const std::string& tool) const {
  auto it = tools_.find(tool);
  return it == tools_.end() ? nullptr : &it->second;
}

void CommandLedger::Observe(std::string_view point, const Command& c) const {
  if (options_.observer) options_.observer(point, c);
}

Result<Command> CommandLedger::Transit(const Command& c, TransitionRequest r) {
  r.run = c.run;
  r.command_key = c.command_key;
  r.now_ms = clock_.NowMs();
  return store_.Apply(r);
}

// The lease this worker asks for at `now_ms`; the caller fills in run and key
// when the command already exists (the store takes them from the new command).
TransitionRequest CommandLedger::LeaseRequest(int64_t now_ms) const {
  TransitionRequest r;
  r.transition = Transition::kLease;
  r.owner = options_.worker_id;
  r.lease_ms = options_.lease_ms;
  r.now_ms = now_ms;
  return r;
}

Result<Command> CommandLedger::Reserve(const CommandSpec& spec) {
  auto initial = NewCommand(spec, clock_.NowMs());
  if (!initial) return initial.error();
  auto reserved = store_.Reserve(*initial);
  if (!reserved) return reserved.error();
  Observe("reserved", reserved->command);
  return reserved->command;
}

Result<Command> CommandLedger::Lease(const RunId& run, std::string_view command_key) {
  TransitionRequest r = LeaseRequest(clock_.NowMs());
  r.run = run;
  r.command_key = std::string(command_key);
  auto leased = store_.Apply(r);
  if (leased) Observe("leased", *leased);
  return leased;
}

Result<ReserveResult> CommandLedger::ReserveAndLease(const CommandSpec& spec) {
  const int64_t now = clock_.NowMs();
  auto initial = NewCommand(spec, now);
  if (!initial) return initial.error();
  auto reserved = store_.ReserveAndLease(*initial, LeaseRequest(now));
  if (!reserved) return reserved;
  Observe("reserved", reserved->command);
  if (reserved->leased) Observe("leased", reserved->command);
  return reserved;
}

Result<CommitReserveResult> CommandLedger::CommitReserveAndLease(const EncodedCommit& commit,
                                                                 const CommandSpec& spec) {
  const int64_t now = clock_.NowMs();
  auto initial = NewCommand(spec, now);
  if (!initial) return initial.error();
  auto done = store_.CommitReserveAndLease(commit, *initial, LeaseRequest(now));
  if (!done || !done->commit.refusal.empty()) return done;
  Observe("reserved", done->reserve.command);
  if (done->reserve.leased) Observe("leased", done->reserve.command);
  return done;
}

std::pair<Result<Command>, Result<CommitReserveResult>> CommandLedger::CommitReserveAndLeaseBehind(
    DeferringCommandStore& store, std::unique_ptr<PendingTransition> before,
    const EncodedCommit& commit, const CommandSpec& spec) {
  const int64_t now = clock_.NowMs();
  auto initial = NewCommand(spec, now);
  if (!initial) return {before->Wait(), initial.error()};
  auto both =
      store.CommitReserveAndLeaseBehind(std::move(before), commit, *initial, LeaseRequest(now));
  const auto& done = both.second;
  if (done && done->commit.refusal.empty()) {
    Observe("reserved", done->reserve.command);
    if (done->reserve.leased) Observe("leased", done->reserve.command);
  }
  return both;
}

Result<Command> CommandLedger::Unlease(const Command& leased) {
  TransitionRequest r;
  r.transition = Transition::kUnlease;
  r.fencing_token = leased.fencing_token;
  auto back = Transit(leased, r);
  if (back) Observe("unleased", *back);
  return back;
}

TransitionRequest OutcomeTransition(const Command& leased, const ToolOutcome& outcome) {
  TransitionRequest r;
  r.run = leased.run;
  r.command_key = leased.command_key;
  r.fencing_token = leased.fencing_token;
  bool evidenced = !outcome.external_id.empty() && !outcome.evidence.is_null();
  if (outcome.kind == ToolOutcome::Kind::kSucceeded && evidenced) {
    r.transition = Transition::kSucceed;
    r.external_id = outcome.external_id;
    r.evidence = outcome.evidence;
  } else if (outcome.kind == ToolOutcome::Kind::kFailed) {
    r.transition = Transition::kFail;
    r.error = outcome.error.empty() ? "the tool refused the call" : outcome.error;
  } else {
    r.transition = Transition::kMarkUncertain;
    r.error = outcome.kind == ToolOutcome::Kind::kSucceeded
                  ? "the tool reported success without an external id and evidence"
                  : (outcome.error.empty() ? "ambiguous outcome" : outcome.error);
  }
  return r;
}

Result<Command> CommandLedger::RecordOutcome(const Command& leased, const ToolOutcome& outcome) {
  TransitionRequest r = OutcomeTransition(leased, outcome);
  auto recorded = Transit(leased, r);
  if (!recorded) return recorded;
  Observe("outcome", *recorded);
  if (recorded->state == CommandState::kUncertain) {
    return Reconcile(recorded->run, recorded->command_key);
  }
  return recorded;
}

Result<Command> CommandLedger::CallTool(const Command& leased, const ToolBinding& binding) {
  ToolOutcome outcome;
  try {
    outcome = binding.call(leased);
  } catch (const std::exception& e) {
    outcome = ToolOutcome::Ambiguous(std::string("tool call threw: ") + e.what());
  } catch (...) {
    outcome = ToolOutcome::Ambiguous("tool call threw a non-standard exception");
  }
  return RecordOutcome(leased, outcome);
}

Result<Command> CommandLedger::Execute(const RunId& run, std::string_view command_key) {
  auto current = store_.Get(run, command_key);
  if (!current) return current;
  const ToolBinding* binding = BindingOf(current->call.tool);
  if (binding == nullptr || !binding->call) {
    return Status::NotFound("no binding for tool '" + current->call.tool + "'");
  }
  // Each pass moves the command one durable step; released commands loop back,
  // bounded by the attempt budget the store enforces on release.
  for (uint32_t pass = 0; pass <= options_.max_attempts + 1; ++pass) {
    switch (current->state) {
      case CommandState::kPending:
      case CommandState::kApproved: {
        auto leased = Lease(run, command_key);
        if (!leased) return leased;
        current = CallTool(*leased, *binding);
        if (!current) return current;
        break;
      }
      case CommandState::kUncertain:
        current = Reconcile(run, command_key);
        if (!current) return current;
        if (current->state == CommandState::kUncertain) return current;  // undecidable now
        break;
      default:
        return current;  // terminal, blocked, or leased by someone
    }
  }
  return current;
}

Result<Command> CommandLedger::Run(const CommandSpec& spec) {
  auto reserved = Reserve(spec);
  if (!reserved) return reserved;
  return Execute(reserved->run, reserved->command_key);
}

Result<Command> CommandLedger::Reconcile(const RunId& run, std::string_view command_key) {
  auto current = store_.Get(run, command_key);
  if (!current) return current;
  if (current->state != CommandState::kUncertain) return current;
  const ToolBinding* binding = BindingOf(current->call.tool);
  LookupResult found;
  if (binding == nullptr || !binding->lookup) {
    found = LookupResult::Unknown("tool '" + current->call.tool + "' has no lookup");
  } else {
    try {
      found = binding->lookup(*current);
    } catch (const std::exception& e) {
      found = LookupResult::Unknown(std::string("lookup threw: ") + e.what());
    } catch (...) {
      found = LookupResult::Unknown("lookup threw a non-standard exception");
    }
  }
  TransitionRequest r;
  switch (found.kind) {
    case LookupResult::Kind::kFound:
      if (found.external_id.empty() || found.evidence.is_null()) {
        r.transition = Transition::kEscalate;
        r.reason = "lookup claimed the call took effect but gave no id or evidence";
      } else {
        r.transition = Transition::kReconcileFound;
        r.external_id = found.external_id;
        r.evidence = {{"reconciled", true}, {"lookup", found.evidence}};
      }
      break;
    case LookupResult::Kind::kNotFound:
      if (current->attempts < options_.max_attempts) {
        r.transition = Transition::kRelease;
        r.max_attempts = options_.max_attempts;
      } else {
        r.transition = Transition::kEscalate;
        r.reason = "not found after " + std::to_string(current->attempts) + " attempts";
      }
      break;
    case LookupResult::Kind::kUnknown:
      if (binding == nullptr || !binding->lookup) {
        r.transition = Transition::kEscalate;  // nothing automatic can ever decide it
        r.reason = found.error;
        break;
      }
      return current;  // stays uncertain; a later Reconcile or Recover retries
  }
  auto next = Transit(*current, r);
  if (next) Observe("reconciled", *next);
  return next;
}

Result<Command> CommandLedger::ResolveInFlight(const Command& c, RecoveryReport& report) {
  Command current = c;
  if (current.state == CommandState::kLeased) {
    TransitionRequest r;
    r.transition = Transition::kExpireLease;
    r.owner = options_.worker_id;
    r.error = "lease of " + current.lease_owner + " ended without an outcome (found by " +
              options_.worker_id + " on recovery)";
    auto expired = Transit(current, r);
    if (!expired) {
      if (expired.error().code() == StatusCode::kFailedPrecondition) {
        ++report.leased_elsewhere;  // a live lease of another worker
        return current;
      }
      return expired;
    }
    ++report.expired_leases;
    current = *expired;
  }
  auto resolved = Reconcile(current.run, current.command_key);
  if (!resolved) return resolved;
  switch (resolved->state) {
    case CommandState::kSucceeded:
      ++report.reconciled;
      break;
    case CommandState::kPending:
      ++report.released;
      break;
    case CommandState::kBlocked:
      ++report.escalated;
      break;
    case CommandState::kUncertain:
      ++report.still_uncertain;
      break;
    default:
      break;
  }
  return resolved;
}

Result<RecoveryReport> CommandLedger::Recover(const RunId& run) {
  auto commands = store_.ListCommands(run);
  if (!commands) return commands.error();
  RecoveryReport report;
  for (const Command& c : *commands) {
    switch (c.state) {
      case CommandState::kSucceeded:
      case CommandState::kFailed:
      case CommandState::kCancelled:
        ++report.done;
        break;
      case CommandState::kBlocked:
        ++report.awaiting_human;
        break;
      case CommandState::kPending:
      case CommandState::kApproved:
        ++report.ready;
        break;
      case CommandState::kLeased:
      case CommandState::kUncertain: {
        auto resolved = ResolveInFlight(c, report);
        if (!resolved) return resolved.error();
        if (resolved->state == CommandState::kPending) ++report.ready;
        break;
      }
    }
  }
  auto record = store_.GetRun(run);
  if (!record) return record.error();
  if (record->status == RunStatus::kCompensating) {
    auto compensated = CompensateRun(run, record->reason);
    if (!compensated && compensated.error().code() != StatusCode::kUnavailable) {
      return compensated.error();
    }
    report.compensation_resumed = true;
  }
  return report;
}

}  // namespace taskledger
