// CommandTransition: the state machine of a command, as one table.
//
// Every change of a command after its reservation is one of the transitions
// below, applied atomically by the CommandStore (in Redis: one server-side
// function per transition that checks every precondition before its first
// write). The table (TransitionSources, TransitionTarget,
// TransitionNeedsFencingToken) is the one source of truth: the Redis functions'
// Lua tables are generated from it. ApplyTransition is the reference
// implementation of the guards: the in-memory store runs it under its lock, the
// Redis functions mirror it, and the contract tests run the same cases on both
// (docs/commands.md).
//
// Errors: FailedPrecondition when the current state does not allow the
// transition (or a guard like "lease expired" fails), Conflict when the
// fencing token is stale (a newer lease exists), InvalidArgument for a missing
// reason / evidence / owner, LimitExceeded when an attempt or replay budget is
// spent. Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"
#include "taskledger/commands/command.h"

namespace taskledger {

enum class Transition {
  kLease = 0,       // pending|approved -> leased: attempts+1, fencing token+1
  kRenew,           // leased -> leased: extends the lease (token must match, not expired)
  kSucceed,         // leased -> succeeded (token must match; external id + evidence)
  kFail,            // leased -> failed (token must match; error)
  kMarkUncertain,   // leased -> uncertain (token must match; error)
  kExpireLease,     // leased -> uncertain when the lease expired, or by its own owner
  kReconcileFound,  // uncertain -> succeeded (external id + evidence from a lookup)
  kRelease,         // uncertain -> pending for a retry while attempts < max_attempts
  kEscalate,        // uncertain -> blocked, escalated to a human (reason)
  kApprove,         // blocked -> approved (approver, reason)
  kDeny,            // blocked -> cancelled (approver, reason)
  kCancel,          // pending|blocked|approved -> cancelled (reason)
  kReplay,          // failed -> pending, explicitly (reason; attempt, run and rate budgets)
  // leased -> pending (token must match): gives back a lease whose call never
  // started (the session's write-ahead commit failed after ReserveAndLease);
  // attempts-1, the token stays raised so the returned lease is fenced.
  kUnlease,
};
inline constexpr int kTransitionCount = 14;

std::string_view TransitionName(Transition t);  // "lease", "renew", ...
// The states a transition may start from.
std::span<const CommandState> TransitionSources(Transition t);
// The state a transition ends in.
CommandState TransitionTarget(Transition t);
// True if the transition must present the current lease's fencing token.
bool TransitionNeedsFencingToken(Transition t);

// Budgets for explicit replays, enforced atomically by the store.
struct ReplayLimits {
  uint32_t max_attempts_per_command = 5;  // a command with this many leases is not replayed
  uint32_t max_replays_per_run = 20;
  uint32_t max_replays_per_window = 5;  // rate limit per run...
  int64_t window_ms = 60'000;           // ...within this sliding-start window
};

struct TransitionRequest {
  RunId run;
  std::string command_key;
  Transition transition = Transition::kLease;
  int64_t now_ms = 0;
  uint64_t fencing_token = 0;  // kRenew, kSucceed, kFail, kMarkUncertain, kUnlease
  std::string owner;     // kLease, kRenew (must match), kExpireLease (the owner may expire early)
  int64_t lease_ms = 0;  // kLease, kRenew
  std::string external_id;    // kSucceed, kReconcileFound
  nlohmann::json evidence;    // kSucceed, kReconcileFound
  std::string error;          // kFail, kMarkUncertain, kExpireLease (optional)
  std::string actor;          // kApprove, kDeny, kCancel, kReplay
  std::string reason;         // kEscalate, kApprove, kDeny, kCancel, kReplay
  uint32_t max_attempts = 0;  // kRelease
  ReplayLimits replay;        // kReplay
};

// Run-level counters a transition may read and update (replay budget, LIFO order).
struct RunCounters {
  uint64_t completed_seq = 0;  // successes so far in the run
  uint32_t replays = 0;
  int64_t replay_window_start_ms = 0;
  uint32_t replay_window_count = 0;
  bool operator==(const RunCounters&) const = default;
};

// Checks every precondition of request `r` against command `c` and its run's
// counters; on success applies the transition to both. On error both are left
// untouched.
Status ApplyTransition(Command& c, RunCounters& run, const TransitionRequest& r);

}  // namespace taskledger
