// Internal to the session component: what a Session keeps for its command
// ledger, the write path HandleToolCall and ProposeExternal share (reserve,
// ready test, approval, write-ahead commit, lease), and the one place an
// executor is called (so that an exception it throws never leaves the
// session). Not thread-safe, like Session.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "taskledger/commands/command_ledger.h"
#include "taskledger/commands/deferred_transition.h"
#include "taskledger/policy/checker.h"
#include "taskledger/session/session.h"

namespace taskledger {

struct Session::Commands {
  Commands(CommandStore& s, RunId r, const Clock& clock, CommandLedgerOptions ledger_options,
           SessionCommandOptions o)
      : store(s),
        run(std::move(r)),
        ledger(s, clock, std::move(ledger_options)),
        options(std::move(o)) {
    if (options.defer_settle) deferring = dynamic_cast<DeferringCommandStore*>(&s);
  }
  // Binds `tool`'s lookup (SessionCommandOptions::lookup) in the ledger.
  void BindLookup(const std::string& tool);

  // The write path of an allowed or approval-requiring environment-changing
  // call, up to the lease: reads a deferred settle still outstanding (its
  // error denies the call), reserves its command (decision record attached),
  // reconciles an uncertain one, reports one that may not run now, stages an
  // operator's approval, makes the write-ahead commit and leases. Returns the
  // leased command; nullopt when `result` already says why the call does not
  // run now (its call record staged). `external`: ProposeExternal's caller
  // proposing its own call again finds the lease it already holds in
  // result.command (and nullopt returned: nothing new to run).
  static std::optional<Command> ReserveReady(Session& s, const ProposedCall& call,
                                             CallResult& result, bool external);
  // The conversation's confirmation (the user's yes) as it was, after
  // staging its consumption by `call` (a write-ahead commit is about to be
  // made): whoever finds that the call will not run restores it.
  static std::optional<Entry> ConsumeForWrite(Session& s, const ProposedCall& call);
  // Whether the write-ahead commit, reserve and lease can be one store call
  // (CommitReserveLease): commit before write on, the command store reaching
  // the ledger's own database (the same carrier id) and the run being the
  // conversation's (one hash tag).
  static bool CarriesCommit(const Session& s);
  // The write-ahead commit with the reserve and lease of `spec`, one store
  // call (CommandLedger::CommitReserveAndLease): leased means committed too.
  // Not leased: nothing committed by this call and the command as found (a
  // confirmation consumed for the commit is restored). An error (a commit
  // conflict, a store failure): the confirmation restored, nothing leased.
  static Result<ReserveResult> CommitReserveLease(Session& s, const ProposedCall& call,
                                                  const CommandSpec& spec);
  // ReserveReady's end for a command its reservation leased at once (an
  // allowed call, one store call): stages an operator's approval and makes
  // the write-ahead commit; if that fails, gives the lease back (Unlease).
  static std::optional<Command> WriteAhead(Session& s, const ProposedCall& call, Command leased,
                                           CallResult& result);
  // ReserveReady from a command already reserved (ResumeApproved's approved ones).
  static std::optional<Command> LeaseReady(Session& s, const ProposedCall& call, Command c,
                                           CallResult& result);
  // Leases `c`; if the lease cannot be taken, reports why in `result`
  // (another worker's lease, or a store failure: then `consumed`, the
  // confirmation the write-ahead commit used up, is restored) and returns nullopt.
  static std::optional<Command> Lease(Session& s, const ProposedCall& call, const Command& c,
                                      CallResult& result, const std::optional<Entry>& consumed);
  // Runs a command this session leased, settles it and records the call;
  // `defer`: the settle may be sent without waiting (SendSettle).
  static void RunLeased(Session& s, const ProposedCall& call, const Command& leased,
                        const ContextToolExecutor& execute, CallResult& result, bool defer);

  // Reads the answer of the deferred settle outstanding, if any (Flush):
  // Ok, or its error naming the command (then also staged as a
  // command_unsettled extraction error). Called first by every operation
  // that reaches the command store, so each sees the settled record.
  static Status Settle(Session& s);
  // What Settle does with the result of `u`'s settle, however it was read.
  struct Unsettled;
  static Status Settled(Session& s, const Unsettled& u, Result<Command> settled);
  // Sends the settle of `leased` for `outcome` without waiting (deferred
  // settle) when the store can and the outcome is a success or a failure;
  // then result.command is the record as the settle writes it. False when
  // nothing was sent: the caller settles it at once.
  static bool SendSettle(Session& s, const ProposedCall& call, const Command& leased,
                         const ToolOutcome& outcome, CallResult& result);

  CommandStore& store;
  // `store` when it can send a transition without waiting and the options
  // defer settles (SessionCommandOptions::defer_settle); else null.
  DeferringCommandStore* deferring = nullptr;
  // A settle sent and not read yet: its transition, and whose call it was.
  struct Unsettled {
    std::unique_ptr<PendingTransition> pending;
    std::string command_key, tool, call_id;
  };
  std::optional<Unsettled> unsettled;
  RunId run;
  CommandLedger ledger;
  SessionCommandOptions options;
  std::optional<Journal> journal;  // SessionCommandOptions::journal
};

namespace session_internal {

// What one executor call produced: an output, an error Status, or an exception.
struct ExecutorRun {
  std::optional<ToolOutput> output;
  Status error;        // when there is no output
  bool threw = false;  // the error is an exception the executor threw
};

// Calls `execute`, catching everything it throws.
ExecutorRun RunExecutor(const ContextToolExecutor& execute, const ProposedCall& call,
                        const ToolContext& context);

// The deciding rule of `decision` and its reason as a model reads them, with
// the defaults a decision that names neither gets ("policy", "no reason
// given"): one wording for DenialMessage and HeldForApproval.
struct RuleText {
  std::string rule;
  std::string reason;
};
RuleText DecidingRule(const PolicyDecision& decision);

// The tool output as the model reads it: a string verbatim, JSON as text.
std::string OutputText(const nlohmann::json& output);

// Approved by an operator and not run to an end yet: approved, or released
// for another attempt after an uncertain outcome (a release keeps no state
// "approved", but the approval stands).
bool OperatorApproved(const Command& c);

}  // namespace session_internal
}  // namespace taskledger
