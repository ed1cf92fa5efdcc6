// The reference implementation of the command state machine. The in-memory
// store calls ApplyTransition under its lock; the Redis functions
// (command_redis_functions.cc) take their state tables from this file's and
// mirror each guard, check for check; the contract suite runs the same cases
// on both.
// Pure functions; thread-compatible.
#include <array>
#include <string>

#include "taskledger/commands/command_transition.h"

namespace taskledger {
namespace {

using S = CommandState;

constexpr std::array<S, 2> kFromReady = {S::kPending, S::kApproved};
constexpr std::array<S, 1> kFromLeased = {S::kLeased};
constexpr std::array<S, 1> kFromUncertain = {S::kUncertain};
constexpr std::array<S, 1> kFromBlocked = {S::kBlocked};
constexpr std::array<S, 3> kFromCancellable = {S::kPending, S::kBlocked, S::kApproved};
constexpr std::array<S, 1> kFromFailed = {S::kFailed};

constexpr std::string_view kNames[kTransitionCount] = {
    "lease",   "renew",    "succeed", "fail", "mark_uncertain", "expire_lease", "reconcile_found",
    "release", "escalate", "approve", "deny", "cancel",         "replay",       "unlease"};

bool EvidenceMissing(const TransitionRequest& r) {
  return r.external_id.empty() || r.evidence.is_null() ||
         ((r.evidence.is_object() || r.evidence.is_array() || r.evidence.is_string()) &&
          r.evidence.empty());
}

std::string SourcesText(Transition t) {
  std::string out;
  for (S s : TransitionSources(t)) {
    if (!out.empty()) out += "|";
    out += CommandStateName(s);
  }
  return out;
}

// Every check, in the order the Redis functions make them. Nothing is written here.
Status Check(const Command& c, const RunCounters& run, const TransitionRequest& r) {
  const Transition t = r.transition;
  bool from_ok = false;
  for (S s : TransitionSources(t)) from_ok = from_ok || s == c.state;
  if (!from_ok) {
    return Status::FailedPrecondition(std::string(TransitionName(t)) + " needs state " +
                                      SourcesText(t) + ", command " + c.command_key + " is " +
                                      std::string(CommandStateName(c.state)));
  }
  if (TransitionNeedsFencingToken(t) && r.fencing_token != c.fencing_token) {
    return Status::Conflict("fenced: token " + std::to_string(r.fencing_token) +
                            " is stale, the current lease has token " +
                            std::to_string(c.fencing_token));
  }
  switch (t) {
    case Transition::kLease:
      if (r.owner.empty()) return Status::InvalidArgument("lease needs an owner");
      if (r.lease_ms <= 0) return Status::InvalidArgument("lease needs a positive duration");
      return Status::Ok();
    case Transition::kRenew:
      if (r.lease_ms <= 0) return Status::InvalidArgument("renew needs a positive duration");
      if (r.owner != c.lease_owner) {
        return Status::Conflict("fenced: lease is held by " + c.lease_owner);
      }
      if (r.now_ms >= c.lease_expires_ms) {
        return Status::FailedPrecondition("renew: the lease expired at " +
                                          std::to_string(c.lease_expires_ms));
      }
      return Status::Ok();
    case Transition::kSucceed:
    case Transition::kReconcileFound:
      if (EvidenceMissing(r)) {
        return Status::InvalidArgument("success needs an external id and evidence");
      }
      return Status::Ok();
    case Transition::kFail:
    case Transition::kMarkUncertain:
      if (r.error.empty())
        return Status::InvalidArgument(std::string(TransitionName(t)) + " needs an error");
      return Status::Ok();
    case Transition::kUnlease:
      return Status::Ok();
    case Transition::kExpireLease:
      if (r.now_ms < c.lease_expires_ms && (r.owner.empty() || r.owner != c.lease_owner)) {
        return Status::FailedPrecondition("expire_lease: the lease of " + c.lease_owner +
                                          " is live until " + std::to_string(c.lease_expires_ms));
      }
      return Status::Ok();
    case Transition::kRelease:
      if (c.attempts >= r.max_attempts) {
        return Status::LimitExceeded("release: " + std::to_string(c.attempts) +
                                     " attempts reached the maximum of " +
                                     std::to_string(r.max_attempts) + "; escalate instead");
      }
      return Status::Ok();
    case Transition::kEscalate:
    case Transition::kCancel:
      if (r.reason.empty())
        return Status::InvalidArgument(std::string(TransitionName(t)) + " needs a reason");
      return Status::Ok();
    case Transition::kApprove:
    case Transition::kDeny:
      if (r.actor.empty() || r.reason.empty()) {
        return Status::InvalidArgument(std::string(TransitionName(t)) +
                                       " needs an approver and a reason");
      }
      return Status::Ok();
    case Transition::kReplay: {
      if (r.actor.empty() || r.reason.empty()) {
        return Status::InvalidArgument("replay needs an actor and a reason");
      }
      if (c.attempts >= r.replay.max_attempts_per_command) {
        return Status::LimitExceeded("replay: command has used " + std::to_string(c.attempts) +
                                     " of " + std::to_string(r.replay.max_attempts_per_command) +
                                     " attempts");
      }
      if (run.replays >= r.replay.max_replays_per_run) {
        return Status::LimitExceeded("replay: run has used " + std::to_string(run.replays) +
                                     " of " + std::to_string(r.replay.max_replays_per_run) +
                                     " replays");
      }
      bool same_window = r.now_ms - run.replay_window_start_ms < r.replay.window_ms;
      if (same_window && run.replay_window_count >= r.replay.max_replays_per_window) {
        return Status::LimitExceeded("replay: rate limit of " +
                                     std::to_string(r.replay.max_replays_per_window) + " per " +
                                     std::to_string(r.replay.window_ms) + " ms reached");
      }
      return Status::Ok();
    }
  }
  return Status::Internal("unknown transition");
}

}  // namespace

bool TransitionNeedsFencingToken(Transition t) {
  return t == Transition::kRenew || t == Transition::kSucceed || t == Transition::kFail ||
         t == Transition::kMarkUncertain || t == Transition::kUnlease;
}

std::string_view TransitionName(Transition t) {
  int i = static_cast<int>(t);
  return (i >= 0 && i < kTransitionCount) ? kNames[i] : "unknown";
}

std::span<const CommandState> TransitionSources(Transition t) {
  switch (t) {
    case Transition::kLease:
      return kFromReady;
    case Transition::kRenew:
    case Transition::kSucceed:
    case Transition::kFail:
    case Transition::kMarkUncertain:
    case Transition::kExpireLease:
    case Transition::kUnlease:
      return kFromLeased;
    case Transition::kReconcileFound:
    case Transition::kRelease:
    case Transition::kEscalate:
      return kFromUncertain;
    case Transition::kApprove:
    case Transition::kDeny:
      return kFromBlocked;
    case Transition::kCancel:
      return kFromCancellable;
    case Transition::kReplay:
      return kFromFailed;
  }
  return {};
}

CommandState TransitionTarget(Transition t) {
  switch (t) {
    case Transition::kLease:
    case Transition::kRenew:
      return S::kLeased;
    case Transition::kSucceed:
    case Transition::kReconcileFound:
      return S::kSucceeded;
    case Transition::kFail:
      return S::kFailed;
    case Transition::kMarkUncertain:
    case Transition::kExpireLease:
      return S::kUncertain;
    case Transition::kRelease:
    case Transition::kReplay:
    case Transition::kUnlease:
      return S::kPending;
    case Transition::kEscalate:
      return S::kBlocked;
    case Transition::kApprove:
      return S::kApproved;
    case Transition::kDeny:
    case Transition::kCancel:
      return S::kCancelled;
  }
  return S::kPending;
}

Status ApplyTransition(Command& c, RunCounters& run, const TransitionRequest& r) {
  if (Status s = Check(c, run, r); !s.ok()) return s;
  const Transition t = r.transition;
  switch (t) {
    case Transition::kLease:
      c.attempts += 1;
      c.fencing_token += 1;
      c.lease_owner = r.owner;
      c.lease_expires_ms = r.now_ms + r.lease_ms;
      break;
    case Transition::kRenew:
      c.lease_expires_ms = r.now_ms + r.lease_ms;
      break;
    case Transition::kSucceed:
    case Transition::kReconcileFound:
      c.external_id = r.external_id;
      c.evidence = r.evidence;
      run.completed_seq += 1;
      c.completed_seq = run.completed_seq;
      break;
    case Transition::kFail:
    case Transition::kMarkUncertain:
      c.last_error = r.error;
      break;
    case Transition::kExpireLease:
      c.last_error =
          r.error.empty() ? "lease of " + c.lease_owner + " ended without an outcome" : r.error;
      break;
    case Transition::kRelease:
      break;
    case Transition::kUnlease:
      c.attempts -= c.attempts > 0 ? 1 : 0;
      break;
    case Transition::kEscalate:
      c.escalated = true;
      c.escalation_reason = r.reason;
      break;
    case Transition::kApprove:
    case Transition::kDeny:
      c.approver = r.actor;
      c.approval_reason = r.reason;
      break;
    case Transition::kCancel:
      c.cancel_reason = r.actor.empty() ? r.reason : r.actor + ": " + r.reason;
      break;
    case Transition::kReplay:
      c.replays += 1;
      c.replay_reason = r.actor + ": " + r.reason;
      run.replays += 1;
      if (r.now_ms - run.replay_window_start_ms >= r.replay.window_ms) {
        run.replay_window_start_ms = r.now_ms;
        run.replay_window_count = 0;
      }
      run.replay_window_count += 1;
      break;
  }
  if (TransitionTarget(t) != S::kLeased) {
    // Only a live lease has an owner; the token stays, so a late outcome is fenced.
    c.lease_owner.clear();
    c.lease_expires_ms = 0;
  }
  c.state = TransitionTarget(t);
  c.updated_ms = r.now_ms;
  return Status::Ok();
}

}  // namespace taskledger
