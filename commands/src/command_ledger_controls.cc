// CommandLedger, the human and run-level half: approve, deny, cancel,
// controlled replay, and LIFO compensation of a failed run. Each is one or
// more explicit store transitions; budgets are enforced by the store so two
// operators racing cannot overspend them.
#include <algorithm>
#include <vector>

#include "taskledger/commands/command_ledger.h"

namespace taskledger {
namespace {

TransitionRequest HumanRequest(Transition t, const std::string& actor, const std::string& reason) {
  TransitionRequest r;
  r.transition = t;
  r.actor = actor;
  r.reason = reason;
  return r;
}

}  // namespace

Result<Command> CommandLedger::Approve(const RunId& run, std::string_view command_key,
                                       const std::string& approver, const std::string& reason) {
  auto c = store_.Get(run, command_key);
  if (!c) return c;
  return Transit(*c, HumanRequest(Transition::kApprove, approver, reason));
}

Result<Command> CommandLedger::Deny(const RunId& run, std::string_view command_key,
                                    const std::string& approver, const std::string& reason) {
  auto c = store_.Get(run, command_key);
  if (!c) return c;
  return Transit(*c, HumanRequest(Transition::kDeny, approver, reason));
}

Result<Command> CommandLedger::Cancel(const RunId& run, std::string_view command_key,
                                      const std::string& actor, const std::string& reason) {
  auto c = store_.Get(run, command_key);
  if (!c) return c;
  return Transit(*c, HumanRequest(Transition::kCancel, actor, reason));
}

Result<Command> CommandLedger::ReconcileByOperator(const RunId& run, std::string_view command_key,
                                                   const OperatorFinding& finding) {
  if (finding.actor.empty()) return Status::InvalidArgument("reconcile needs an actor");
  if (finding.found && (finding.external_id.empty() || finding.evidence.empty())) {
    return Status::InvalidArgument(
        "a call found to have taken effect needs its external id and "
        "the evidence that shows it");
  }
  auto c = store_.Get(run, command_key);
  if (!c) return c;
  if (c->state != CommandState::kUncertain) {
    return Status::FailedPrecondition("reconcile needs state uncertain, command " + c->command_key +
                                      " is " + std::string(CommandStateName(c->state)));
  }
  TransitionRequest r;
  if (finding.found) {
    r.transition = Transition::kReconcileFound;
    r.external_id = finding.external_id;
    r.evidence = {{"reconciled", true},
                  {"by", "operator"},
                  {"actor", finding.actor},
                  {"evidence", finding.evidence}};
  } else if (c->attempts < options_.max_attempts) {
    r.transition = Transition::kRelease;
    r.max_attempts = options_.max_attempts;
  } else {
    r.transition = Transition::kEscalate;
    r.reason = finding.actor + " found no effect after " + std::to_string(c->attempts) +
               " attempts" + (finding.reason.empty() ? "" : ": " + finding.reason);
  }
  auto next = Transit(*c, r);
  if (next) Observe("reconciled", *next);
  return next;
}

Result<ReplayPlan> CommandLedger::Replay(const RunId& run, std::string_view command_key,
                                         const ReplayRequest& request) {
  if (request.reason.empty()) return Status::InvalidArgument("replay needs a reason");
  if (request.actor.empty()) return Status::InvalidArgument("replay needs an actor");
  auto c = store_.Get(run, command_key);
  if (!c) return c.error();
  if (c->state != CommandState::kFailed) {
    return Status::FailedPrecondition("replay needs state failed, command " + c->command_key +
                                      " is " + std::string(CommandStateName(c->state)));
  }
  if (BindingOf(c->call.tool) == nullptr) {
    return Status::NotFound("no binding for tool '" + c->call.tool + "'");
  }
  if (options_.policy_recheck) {
    if (Status s = options_.policy_recheck(*c); !s.ok()) return s;
  }
  TransitionRequest r = HumanRequest(Transition::kReplay, request.actor, request.reason);
  r.replay = options_.replay;
  if (request.dry_run) {
    // The same checks the store will make, on copies: nothing is written.
    auto record = store_.GetRun(run);
    if (!record) return record.error();
    Command copy = *c;
    RunCounters counters = record->counters;
    r.run = run;
    r.command_key = c->command_key;
    r.now_ms = clock_.NowMs();
    if (Status s = ApplyTransition(copy, counters, r); !s.ok()) return s;
    return ReplayPlan{*c, false};
  }
  auto replayed = Transit(*c, r);
  if (!replayed) return replayed.error();
  return ReplayPlan{*replayed, true};
}

Result<RunStatus> CommandLedger::CompensateRun(const RunId& run, const std::string& reason) {
  const std::string why = reason.empty() ? "run failed" : reason;
  auto started = store_.SetRunStatus(run, {RunStatus::kRunning, RunStatus::kCompensating},
                                     RunStatus::kCompensating, why, clock_.NowMs());
  if (!started) {
    auto record = store_.GetRun(run);
    if (record &&
        (record->status == RunStatus::kCompensated || record->status == RunStatus::kFailed)) {
      return record->status;  // already ended: compensation is not run twice
    }
    return started.error();
  }
  auto commands = store_.ListCommands(run);
  if (!commands) return commands.error();

  // Nothing new starts once the run has failed; in-flight calls are decided first,
  // because a call that took effect must be compensated too.
  RecoveryReport report;
  for (const Command& c : *commands) {
    if (!c.compensates.empty()) continue;
    if (c.state == CommandState::kPending || c.state == CommandState::kApproved ||
        (c.state == CommandState::kBlocked && !c.escalated)) {
      auto cancelled =
          Transit(c, HumanRequest(Transition::kCancel, options_.worker_id, "run failed: " + why));
      if (!cancelled && cancelled.error().code() != StatusCode::kFailedPrecondition) {
        return cancelled.error();
      }
    } else if (c.state == CommandState::kLeased || c.state == CommandState::kUncertain) {
      auto resolved = ResolveInFlight(c, report);
      if (!resolved) return resolved.error();
      if (resolved->state == CommandState::kPending) {
        auto cancelled = Transit(
            *resolved, HumanRequest(Transition::kCancel, options_.worker_id, "run failed: " + why));
        if (!cancelled) return cancelled.error();
      } else if (resolved->state == CommandState::kUncertain ||
                 resolved->state == CommandState::kLeased) {
        return Status::Unavailable("cannot compensate yet: the outcome of " + c.command_key +
                                   " is still unknown");
      }
    }
  }

  commands = store_.ListCommands(run);
  if (!commands) return commands.error();
  std::vector<Command> undo;
  for (const Command& c : *commands) {
    if (c.compensates.empty() && c.state == CommandState::kSucceeded && c.compensation) {
      undo.push_back(c);
    }
  }
  std::sort(undo.begin(), undo.end(), [](const Command& a, const Command& b) {
    return a.completed_seq > b.completed_seq;  // newest success first
  });

  for (const Command& original : undo) {
    CommandSpec spec;
    spec.run = run;
    spec.step = "compensate:" + original.step;
    spec.call.tool = original.compensation->tool;
    spec.target = original.compensation->target;
    spec.call.arguments = original.compensation->arguments;
    spec.decision = {{"compensation_of", original.command_key}};
    spec.pack_version = original.pack_version;
    spec.compensates = original.command_key;
    auto done = Run(spec);
    if (!done) return done.error();
    if (done->state == CommandState::kUncertain || done->state == CommandState::kLeased) {
      return Status::Unavailable("compensation " + done->command_key +
                                 " has no outcome yet; the run stays COMPENSATING");
    }
    if (done->state != CommandState::kSucceeded) {
      auto ended = store_.SetRunStatus(
          run, {RunStatus::kCompensating}, RunStatus::kFailed,
          "compensation " + done->command_key + " is " + std::string(CommandStateName(done->state)),
          clock_.NowMs());
      if (!ended) return ended.error();
      return RunStatus::kFailed;
    }
  }
  auto ended = store_.SetRunStatus(run, {RunStatus::kCompensating}, RunStatus::kCompensated, why,
                                   clock_.NowMs());
  if (!ended) return ended.error();
  return RunStatus::kCompensated;
}

}  // namespace taskledger
