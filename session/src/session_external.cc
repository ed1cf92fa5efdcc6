// Session, the half for a client that runs calls itself (taskledger serve):
// ProposeExternal gates a call and, for a write under the command ledger
// (not an egress tool: that is gated like a write but is no command),
// reserves, writes ahead and leases its command without running it;
// ReportOutcome records what the client's call did, through the same
// ExecutePlain path HandleToolCall uses, and settles the leased command.
// Contracts in session.h; not thread-safe, like Session.
#include <string>
#include <utility>

#include "internal/session_commands.h"

namespace taskledger {
namespace {

// What the client reported, as the executor HandleToolCall would have run.
ContextToolExecutor Replay(const ExternalOutcome& outcome) {
  return [&outcome](const ProposedCall& call, const ToolContext&) -> Result<ToolOutput> {
    switch (outcome.kind) {
      case ExternalOutcome::Kind::kOk:
        return ToolOutput{outcome.output, false};
      case ExternalOutcome::Kind::kToolError:
        return ToolOutput{outcome.output, true};
      case ExternalOutcome::Kind::kNotMade:
        return Status::Unavailable("the client could not call " + call.tool + ": " +
                                   outcome.detail);
      case ExternalOutcome::Kind::kUncertain:
        break;
    }
    return Status::Timeout("the client's call of " + call.tool +
                           " has no known outcome: " + outcome.detail);
  };
}

}  // namespace

CallClass Session::ClassOf(const std::string& tool) const {
  // The checker holds the session's pack (Open checked the version; a
  // borrowed one keeps it, SessionOptions::checker), so its plan is the pack's.
  return checker_->ClassOf(tool);
}

CallResult Session::ProposeExternal(const ProposedCall& call) {
  CallResult result = Check(call);
  const bool writes = !result.decision.read_only();
  // As in HandleToolCall: an egress tool is gated and recorded like a write
  // (Authorize's write-ahead commit, a call record that writes) but is not a
  // command: it changes nothing to reconcile, it only sends data out.
  if (writes && commands_ && !result.decision.egress &&
      (result.decision.allowed() || result.decision.outcome == Outcome::kRequireApproval)) {
    ProposeCommand(call, result);
    return result;
  }
  FinishAuthorize(call, result);
  return result;
}

void Session::ProposeCommand(const ProposedCall& call, CallResult& result) {
  auto leased = Commands::ReserveReady(*this, call, result, /*external=*/true);
  if (!leased) return;
  result.command = std::move(leased);
  result.message.clear();
  result.message_is_error = false;
}

Result<CallResult> Session::ReportOutcome(const ProposedCall& call,
                                          const ExternalOutcome& outcome) {
  CallResult result;
  if (last_record_) result.decision_record = CommandDecision(last_record_);
  const bool writes = ClassOf(call.tool).writes();
  if (outcome.command_key.empty()) {
    ExecutePlain(call, writes, Replay(outcome), ToolContext{}, result);
    return result;
  }
  if (!commands_) {
    return Status::FailedPrecondition(
        "this session has no command store; report without a "
        "command key");
  }
  if (Status settled = Commands::Settle(*this); !settled.ok()) return settled;
  Commands& cmd = *commands_;
  auto current = cmd.store.Get(cmd.run, outcome.command_key);
  if (!current) return current.error();
  const Command& c = *current;
  if (c.fencing_token != outcome.fencing_token) {
    return Status::FailedPrecondition("command " + c.command_key + " is no longer under lease " +
                                      std::to_string(outcome.fencing_token) + " (now lease " +
                                      std::to_string(c.fencing_token) + ", " +
                                      std::string(CommandStateName(c.state)) + ")");
  }
  if (c.state == CommandState::kLeased) {
    // Settle first: on an error nothing is staged and the report may be retried.
    cmd.BindLookup(c.call.tool);
    ToolOutcome settle;
    switch (outcome.kind) {
      case ExternalOutcome::Kind::kOk:
        settle = ToolOutcome::Succeeded(c.idempotency_key,
                                        {{"output", outcome.output}, {"call_id", call.id}});
        break;
      case ExternalOutcome::Kind::kToolError:
        settle = ToolOutcome::Failed(session_internal::OutputText(outcome.output));
        break;
      case ExternalOutcome::Kind::kNotMade:
        settle = ToolOutcome::Failed("the client could not make the call: " + outcome.detail);
        break;
      case ExternalOutcome::Kind::kUncertain:
        settle =
            ToolOutcome::Ambiguous("the client's call has no known outcome: " + outcome.detail);
        break;
    }
    auto settled = cmd.ledger.RecordOutcome(c, settle);
    if (!settled) return settled.error();
    result.command = *settled;
  } else if (IsTerminal(c.state) || outcome.kind == ExternalOutcome::Kind::kUncertain) {
    result.command = c;  // this lease's outcome is already recorded: a retried report
  } else {
    // The lease expired unreported and the startup guard took the command back.
    return Status::FailedPrecondition("the lease " + std::to_string(c.fencing_token) +
                                      " of command " + c.command_key + " ended unreported; it is " +
                                      std::string(CommandStateName(c.state)) + " now");
  }
  ToolContext context{c.idempotency_key, c.command_key, c.run, c.attempts};
  ExecutePlain(call, true, Replay(outcome), context, result);
  return result;
}

}  // namespace taskledger
