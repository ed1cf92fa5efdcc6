// CommandLedger: runs environment-changing tool calls so that a crash at any
// point leaves a record that says what happened, and recovers by evidence.
//
// The protocol for one call: Reserve (the record exists before anything
// runs) -> Lease (attempt+1, a new fencing token) -> the tool call with the
// idempotency key -> the outcome: succeeded with an external id and evidence,
// failed on a definite refusal, uncertain on an ambiguous one. An uncertain
// command is reconciled through the tool's lookup: found -> succeeded with the
// lookup as evidence; not found -> released for another attempt, or escalated
// to a human after max_attempts. Success is never recorded without evidence.
//
// Recover (the startup guard) must run before a restarted worker does new
// work: it turns expired leases, and the leases of this worker's previous
// incarnation, into uncertain commands and reconciles every uncertain one.
// Approvals, cancellation and replay are explicit operations on records;
// replay has a required reason, a dry run, and per-command, per-run and rate
// budgets. CompensateRun undoes a failed run's successes in LIFO order, as
// commands under the same rules, and ends the run COMPENSATED or FAILED.
//
// Thread-compatible: one CommandLedger per worker thread; any number of them
// (in any number of processes) may share a store, which arbitrates.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "taskledger/base/clock.h"
#include "taskledger/commands/command.h"
#include "taskledger/commands/command_store.h"
#include "taskledger/commands/deferred_transition.h"
#include "taskledger/commands/tool_binding.h"

namespace taskledger {

struct CommandLedgerOptions {
  // Names this worker in leases. A restarted worker that reuses its id may
  // reclaim its predecessor's leases at once instead of waiting for expiry.
  std::string worker_id = "worker";
  int64_t lease_ms = 30'000;
  // Leases per command before an unresolved one is escalated instead of retried.
  uint32_t max_attempts = 3;
  ReplayLimits replay;
  // Re-checks a command against the current policy for a replay: OK to allow,
  // an error (normally PolicyError) to refuse. Unset: replays skip the re-check.
  std::function<Status(const Command&)> policy_recheck;
  // Called after each durable protocol step with its name ("reserved", "leased",
  // "outcome", "reconciled", "unleased"): for tracing, and for the crash harness.
  // ReserveAndLease reports "reserved" and then "leased" after its one store call.
  std::function<void(std::string_view point, const Command&)> observer;
};

// What the startup guard found and did.
struct RecoveryReport {
  int done = 0;              // already succeeded, failed or cancelled: skipped
  int expired_leases = 0;    // leased without an outcome, turned uncertain
  int reconciled = 0;        // uncertain, found by lookup: now succeeded
  int released = 0;          // uncertain, not found: pending again
  int escalated = 0;         // uncertain with attempts spent: blocked for a human
  int still_uncertain = 0;   // lookup could not decide (service unreachable)
  int awaiting_human = 0;    // blocked
  int ready = 0;             // pending or approved: ready for new work
  int leased_elsewhere = 0;  // live leases of other workers
  bool compensation_resumed = false;
};

struct ReplayRequest {
  std::string actor;
  std::string reason;
  bool dry_run = false;  // re-check policy and budgets; change nothing
};

// What an operator found out, outside taskledger, about an uncertain command.
struct OperatorFinding {
  bool found = false;       // the call took effect in the external system
  std::string external_id;  // found: the id the system gave it
  std::string evidence;     // found: what shows it (a ticket, a log line); required
  std::string actor;        // who checked; required
  std::string reason;       // not found: optional note, kept in the escalation reason
};

struct ReplayPlan {
  Command command;  // after the replay (or unchanged for a dry run)
  bool replayed = false;
};

class CommandLedger {
 public:
  // `store` and `clock` must outlive the ledger.
  CommandLedger(CommandStore& store, const Clock& clock, CommandLedgerOptions options = {});

  // Registers how to call and look up `tool`; replaces an earlier binding.
  void Bind(std::string tool, ToolBinding binding);

  // Reserves the command for `spec` (allowed by policy; blocked if it needs
  // approval). The same logical command returns the existing record.
  Result<Command> Reserve(const CommandSpec& spec);
  // Leases a pending or approved command for this worker.
  Result<Command> Lease(const RunId& run, std::string_view command_key);
  // Reserve and, if the command is pending or approved, Lease, in one store
  // call (CommandStore::ReserveAndLease). `leased` says whether it leased.
  Result<ReserveResult> ReserveAndLease(const CommandSpec& spec);
  // ReserveAndLease carrying a ledger turn commit in the same store call
  // (CommandStore::CommitReserveAndLease): a session's write-ahead commit,
  // reserve and lease in one round trip.
  Result<CommitReserveResult> CommitReserveAndLease(const EncodedCommit& commit,
                                                    const CommandSpec& spec);
  // CommitReserveAndLease sent behind `before`, a settle that `store` (this
  // ledger's store) sent and nobody has read: one wait for both
  // (DeferringCommandStore::CommitReserveAndLeaseBehind, whose guard writes
  // nothing unless the settle landed). Returns the settle's result and the
  // reserve's.
  std::pair<Result<Command>, Result<CommitReserveResult>> CommitReserveAndLeaseBehind(
      DeferringCommandStore& store, std::unique_ptr<PendingTransition> before,
      const EncodedCommit& commit, const CommandSpec& spec);
  // Gives back a lease this worker took but whose call never started
  // (leased -> pending, attempts-1; the token stays raised, so `leased`'s
  // lease is fenced). Conflict if a newer lease exists.
  Result<Command> Unlease(const Command& leased);
  // Records a tool outcome under the lease `leased` holds. An ambiguous
  // outcome is marked uncertain and reconciled at once. A success without an
  // external id or evidence is treated as ambiguous.
  Result<Command> RecordOutcome(const Command& leased, const ToolOutcome& outcome);
  // Drives one command as far as it can go now: skips terminal ones,
  // reconciles uncertain ones, and leases, calls and records ready ones, retrying
  // released attempts up to max_attempts. Returns the record where it stopped
  // (blocked and live-leased-elsewhere commands are returned unchanged).
  // NotFound if the tool has no binding.
  Result<Command> Execute(const RunId& run, std::string_view command_key);
  // Reserve + Execute.
  Result<Command> Run(const CommandSpec& spec);
  // Resolves one uncertain command through its tool's lookup.
  Result<Command> Reconcile(const RunId& run, std::string_view command_key);
  // Settles an uncertain command by an operator's finding, with the state
  // machine's own moves: found -> succeeded (external id and the operator's
  // evidence); not found -> released for another attempt (pending), or
  // escalated to a human (blocked) once max_attempts leases are spent.
  // InvalidArgument for a finding without actor, or found without id or
  // evidence; FailedPrecondition unless the command is uncertain.
  Result<Command> ReconcileByOperator(const RunId& run, std::string_view command_key,
                                      const OperatorFinding& finding);
  // The startup guard; see the header comment.
  Result<RecoveryReport> Recover(const RunId& run);

  Result<Command> Approve(const RunId& run, std::string_view command_key,
                          const std::string& approver, const std::string& reason);
  Result<Command> Deny(const RunId& run, std::string_view command_key, const std::string& approver,
                       const std::string& reason);
  Result<Command> Cancel(const RunId& run, std::string_view command_key, const std::string& actor,
                         const std::string& reason);
  // Replays a failed command. PolicyError if the re-check refuses,
  // LimitExceeded when a budget is spent (also reported by a dry run).
  Result<ReplayPlan> Replay(const RunId& run, std::string_view command_key,
                            const ReplayRequest& request);

  // Fails the run and undoes it: cancels its unstarted commands, resolves
  // in-flight ones, then runs the compensations of its successes newest
  // first. Returns COMPENSATED, or FAILED if a compensation did not succeed.
  // Unavailable if an in-flight outcome cannot be decided yet; the run stays
  // COMPENSATING and a later call (or Recover) resumes it.
  Result<RunStatus> CompensateRun(const RunId& run, const std::string& reason);

  const CommandLedgerOptions& options() const { return options_; }

 private:
  Result<Command> Transit(const Command& c, TransitionRequest r);
  TransitionRequest LeaseRequest(int64_t now_ms) const;
  Result<Command> ResolveInFlight(const Command& c, RecoveryReport& report);
  Result<Command> CallTool(const Command& leased, const ToolBinding& binding);
  void Observe(std::string_view point, const Command& c) const;
  const ToolBinding* BindingOf(const std::string& tool) const;

  CommandStore& store_;
  const Clock& clock_;
  CommandLedgerOptions options_;
  std::map<std::string, ToolBinding, std::less<>> tools_;
};

}  // namespace taskledger
