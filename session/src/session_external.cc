// Session, the half for a client that runs calls itself (taskledger serve):
// ProposeExternal gates a call and, for a write under the command ledger,
// reserves, writes ahead and leases its command without running it;
// ReportOutcome records what the client's call did, through the same
// ExecutePlain path HandleToolCall uses, and settles the leased command.
// Contracts in session.h; not thread-safe, like Session.
#include <string>
#include <utility>

#include "internal/session_commands.h"

namespace taskledger {
namespace {

// The natural key of what a call changes, as session_commands.cc picks it.
std::string ExternalTargetOf(const SessionCommandOptions& options, const ProposedCall& call) {
  if (options.target_of) return options.target_of(call);
  for (const char* name : {"path", "destination", "uri", "url", "name", "id", "order_id"}) {
    auto it = call.arguments.find(name);
    if (it != call.arguments.end() && it->is_string()) return it->get<std::string>();
  }
  return {};
}

bool ApprovedByOperator(const Command& c) {
  return c.state == CommandState::kApproved ||
         (c.state == CommandState::kPending && !c.approver.empty());
}

// The call id a command was reserved for (its decision record names it).
std::string CallIdOf(const Command& c) {
  auto it = c.decision.find("call_id");
  return it != c.decision.end() && it->is_string() ? it->get<std::string>() : std::string();
}

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

CallResult Session::ProposeExternal(const ProposedCall& call) {
  CallResult result = Check(call);
  const bool writes = !result.decision.read_only;
  if (writes && commands_ &&
      (result.decision.allowed() || result.decision.outcome == Outcome::kRequireApproval)) {
    ProposeCommand(call, result);
    return result;
  }
  FinishAuthorize(call, result);
  return result;
}

void Session::ProposeCommand(const ProposedCall& call, CallResult& result) {
  Commands& cmd = *commands_;
  cmd.BindLookup(call.tool);
  CommandSpec spec;
  spec.run = cmd.run;
  spec.step = cmd.options.step_of ? cmd.options.step_of(call) : std::string("call");
  spec.tool = call.tool;
  spec.target = ExternalTargetOf(cmd.options, call);
  spec.arguments = call.arguments;
  spec.decision = result.decision_record;
  spec.pack_version = pack_->version();
  spec.requires_approval = result.decision.outcome == Outcome::kRequireApproval;
  auto reserved = cmd.ledger.Reserve(spec);
  if (!reserved) {
    DenyForStore(call, reserved.error(), result);
    StageCallRecord(call, true, "denied");
    return;
  }
  Command c = std::move(reserved).value();
  if (c.state == CommandState::kLeased && CallIdOf(c) == call.id) {
    // The same client proposing its own call again (its answer was lost):
    // the lease it was given still stands.
    result.command = c;
    return;
  }
  if (c.state == CommandState::kUncertain) {
    if (auto reconciled = cmd.ledger.Reconcile(c.run, c.command_key)) c = *reconciled;
  }
  const bool ready =
      ApprovedByOperator(c) || (c.state == CommandState::kPending && result.decision.allowed());
  if (!ready) {
    ReportCommand(call, c, result);
    return;
  }
  if (ApprovedByOperator(c)) StageApproval(call, c, result);
  std::optional<Entry> consumed;
  if (commit_before_write_ && !CommitBeforeWrite(call, result, &consumed)) {
    StageCallRecord(call, true, "denied");  // the command stays ready for a retry
    result.command = c;
    return;
  }
  auto leased = cmd.ledger.Lease(c.run, c.command_key);
  if (!leased) {
    auto now = cmd.store.Get(c.run, c.command_key);
    if (leased.error().code() == StatusCode::kFailedPrecondition && now.has_value()) {
      ReportCommand(call, *now, result);
    } else {
      if (consumed) RestoreConfirmation(*consumed);
      DenyForStore(call, leased.error(), result);
      StageCallRecord(call, true, "denied");
      result.command = c;
    }
    return;
  }
  result.command = *leased;
  result.message.clear();
  result.message_is_error = false;
}

Result<CallResult> Session::ReportOutcome(const ProposedCall& call,
                                          const ExternalOutcome& outcome) {
  CallResult result;
  result.decision_record = last_decision_;
  const bool writes = pack_->Classify(call.tool) != ToolClass::kReadOnly;
  if (outcome.command_key.empty()) {
    ExecutePlain(call, writes, Replay(outcome), ToolContext{}, result);
    return result;
  }
  if (!commands_) {
    return Status::FailedPrecondition(
        "this session has no command store; report without a "
        "command key");
  }
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
    cmd.BindLookup(c.tool);
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
