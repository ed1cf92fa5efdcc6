// Session, the command-ledger half from the lease on: a leased command runs
// with its idempotency key and is settled (RunLeased), a command that may not
// run now is explained to the model (ReportCommand), approvals come back
// through ResumeApproved, and opening a session runs the startup guard for its
// run (see session.h). How a call becomes a leased command is
// session_command_lease.cc; the one place an executor is called is here.
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "internal/session_commands.h"

namespace taskledger {
namespace session_internal {

ExecutorRun RunExecutor(const ContextToolExecutor& execute, const ProposedCall& call,
                        const ToolContext& context) {
  ExecutorRun ran;
  try {
    Result<ToolOutput> out = execute(call, context);
    if (out.has_value()) {
      ran.output = std::move(out).value();
    } else {
      ran.error = out.error();
    }
  } catch (const ToolRaised& e) {
    ran.threw = true;
    ran.error = e.status();
  } catch (const std::exception& e) {
    ran.threw = true;
    ran.error = Status::Internal("the tool " + call.tool + " threw: " + e.what());
  } catch (...) {
    ran.threw = true;
    ran.error = Status::Internal("the tool " + call.tool + " threw a non-standard exception");
  }
  return ran;
}

std::string OutputText(const nlohmann::json& output) {
  if (output.is_string()) return output.get<std::string>();
  return output.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool OperatorApproved(const Command& c) {
  return c.state == CommandState::kApproved ||
         (c.state == CommandState::kPending && !c.approver.empty());
}

}  // namespace session_internal

namespace {

using session_internal::OperatorApproved;
using session_internal::OutputText;

constexpr std::string_view kApprovalRule = "taskledger.operator_approval";

// The call a command was reserved for.
ProposedCall CallOf(const Command& c) {
  ProposedCall call = c.call;
  call.id = ReservingCallId(c);
  if (call.id.empty()) call.id = "command:" + c.command_key;
  return call;
}

std::string Where(const Command& c) {
  return "command " + c.command_key + " of run " + c.run.run + ", idempotency key " +
         c.idempotency_key;
}

// The model's text for a call whose command waits for an operator: the rule
// that asked for approval and its reason (when the decision was one), where
// the request is recorded, and that it is held (DenialMessage alone does not
// say so: without a command store nothing holds it).
std::string HeldForApproval(const std::string& tool, const PolicyDecision& decision,
                            const std::string& where) {
  std::string why;
  if (decision.outcome == Outcome::kRequireApproval) {
    const session_internal::RuleText text = session_internal::DecidingRule(decision);
    why = " (" + text.rule + "): " + text.reason;
  }
  return "Not executed: " + tool + " needs approval by a human operator" + why +
         ". The request is recorded (" + where +
         ") and runs once an operator approves it. Tell the user the request is waiting for "
         "approval.";
}

}  // namespace

void Session::Commands::BindLookup(const std::string& tool) {
  ToolBinding binding;
  binding.lookup = options.lookup;
  ledger.Bind(tool, std::move(binding));
}

const RunId* Session::run() const { return commands_ ? &commands_->run : nullptr; }

Status Session::RecoverCommands() {
  Commands& cmd = *commands_;
  auto listed = cmd.store.ListCommands(cmd.run);
  if (!listed) return listed.error();
  for (const Command& c : *listed) cmd.BindLookup(c.call.tool);
  auto report = cmd.ledger.Recover(cmd.run);
  if (!report) {
    return Status(report.error().code(), "the startup guard of run " + cmd.run.run +
                                             " failed: " + report.error().message());
  }
  recovery_ = *report;
  return Status::Ok();
}

Status Session::Flush() { return commands_ ? Commands::Settle(*this) : Status::Ok(); }

Status Session::Commands::Settle(Session& s) {
  Commands& cmd = *s.commands_;
  if (!cmd.unsettled) return Status::Ok();
  Unsettled u = std::move(*cmd.unsettled);
  cmd.unsettled.reset();
  return Settled(s, u, u.pending->Wait());
}

Status Session::Commands::Settled(Session& s, const Unsettled& u, Result<Command> settled) {
  Commands& cmd = *s.commands_;
  if (settled) {
    if (cmd.options.observer) cmd.options.observer("outcome", *settled);
    return Status::Ok();
  }
  Status why(settled.error().code(),
             "the outcome of " + u.tool + " (call " + u.call_id + ", command " + u.command_key +
                 " of run " + cmd.run.run +
                 ") was sent but not recorded: " + settled.error().message() +
                 "; the startup guard of the run reconciles it through the lookup");
  // The same record a synchronous settle that failed leaves in the turn.
  s.ledger_->StageError(ExtractionError{.source = "commands",
                                        .tool = u.tool,
                                        .call_id = u.call_id,
                                        .rule = std::nullopt,
                                        .code = "command_unsettled",
                                        .message = why.ToString(),
                                        .extra = {{"command_key", u.command_key}}});
  return why;
}

bool Session::Commands::SendSettle(Session& s, const ProposedCall& call, const Command& leased,
                                   const ToolOutcome& outcome, CallResult& result) {
  Commands& cmd = *s.commands_;
  if (cmd.deferring == nullptr) return false;
  TransitionRequest r = OutcomeTransition(leased, outcome);
  if (r.transition != Transition::kSucceed && r.transition != Transition::kFail) return false;
  r.now_ms = s.clock_->NowMs();
  // The record as the store's transition will leave it (the same state
  // machine); its run counters are the store's, so completed_seq is not known.
  Command settled = leased;
  RunCounters counters;
  if (!ApplyTransition(settled, counters, r).ok()) return false;
  settled.completed_seq = leased.completed_seq;
  cmd.unsettled =
      Unsettled{cmd.deferring->SendTransition(r), leased.command_key, call.tool, call.id};
  if (cmd.options.observer) cmd.options.observer("settle_sent", settled);
  result.command = std::move(settled);
  return true;
}

void Session::HandleCommand(const ProposedCall& call, const ContextToolExecutor& execute,
                            CallResult& result) {
  if (auto leased = Commands::ReserveReady(*this, call, result, /*external=*/false)) {
    Commands::RunLeased(*this, call, *leased, execute, result, /*defer=*/true);
  }
}

void Session::StageApproval(const ProposedCall& call, const Command& command, CallResult& result) {
  PolicyDecision d;
  d.outcome = Outcome::kAllow;
  d.rule_id = std::string(kApprovalRule);
  d.reason = "approved by " + command.approver + ": " + command.approval_reason;
  d.rules.push_back(RuleEvaluation{d.rule_id, Outcome::kAllow, d.reason, false});
  d.pack_version = result.decision.pack_version;
  d.tool_class = ToolClass::kWrites;
  StageDecisionRecord(call, d, result);
  result.decision = std::move(d);
}

void Session::Commands::RunLeased(Session& s, const ProposedCall& call, const Command& leased,
                                  const ContextToolExecutor& execute, CallResult& result,
                                  bool defer) {
  Commands& cmd = *s.commands_;
  ToolContext context{leased.idempotency_key, leased.command_key, leased.run, leased.attempts};
  const bool uncertain = s.ExecutePlain(call, true, execute, context, result);
  ToolOutcome outcome;
  if (result.output && !result.output->error) {
    outcome = ToolOutcome::Succeeded(leased.idempotency_key,
                                     {{"output", result.output->output}, {"call_id", call.id}});
  } else if (result.output) {
    outcome = ToolOutcome::Failed(OutputText(result.output->output));
  } else if (uncertain) {
    outcome = ToolOutcome::Ambiguous(result.message);
  } else {
    outcome = ToolOutcome::Failed(result.message);
  }
  if (defer && Commands::SendSettle(s, call, leased, outcome, result)) return;
  auto settled = cmd.ledger.RecordOutcome(leased, outcome);
  if (!settled) {
    // The lease stays; the startup guard of the next session finds it.
    result.command = leased;
    ExtractionError unsettled{.source = "commands",
                              .tool = call.tool,
                              .call_id = call.id,
                              .rule = std::nullopt,
                              .code = "command_unsettled",
                              .message = settled.error().ToString(),
                              .extra = {{"command_key", leased.command_key}}};
    s.ledger_->StageError(std::move(unsettled));
    return;
  }
  result.command = *settled;
  if (uncertain) {
    result.message +=
        " (" + Where(*settled) + ", now " + std::string(CommandStateName(settled->state)) + ")";
  }
}

void Session::ReportCommand(const ProposedCall& call, const Command& c, CallResult& result) {
  result.command = c;
  result.executed = false;
  result.message_is_error = true;
  const std::string tool = call.tool;
  std::string outcome;
  switch (c.state) {
    case CommandState::kSucceeded: {
      outcome = "deduplicated";
      const nlohmann::json* out = c.evidence.is_object() && c.evidence.contains("output")
                                      ? &c.evidence["output"]
                                      : &c.evidence;
      result.output = ToolOutput{*out, false};
      result.message_is_error = false;
      if (commands_->journal) {
        // A journaled loop replaying its turn must see what the call first
        // returned, or every later journaled step would diverge.
        result.message = OutputText(*out);
        break;
      }
      result.message = "Already done: " + tool +
                       " with these arguments already succeeded in this run and was not run "
                       "again (" +
                       Where(c) + "). Its result: " + OutputText(*out);
      break;
    }
    case CommandState::kFailed:
      outcome = "deduplicated";
      result.message = "Error: " + tool +
                       " with these arguments already failed in this run and was not run again (" +
                       Where(c) + "): " + c.last_error +
                       ". Only an operator can replay it (taskledger commands replay).";
      break;
    case CommandState::kBlocked:
      if (c.escalated) {
        outcome = "escalated";
        result.message = "Not executed: an earlier attempt of " + tool +
                         " has an outcome nobody could confirm and waits for an operator (" +
                         c.escalation_reason + "; " + Where(c) +
                         "). Do not try it again; tell the user a person will check it.";
      } else {
        outcome = "awaiting_approval";
        result.message = HeldForApproval(tool, result.decision, Where(c));
      }
      break;
    case CommandState::kCancelled:
      outcome = "cancelled";
      result.message =
          "Not executed: " + tool + " was " +
          (c.approver.empty() ? "cancelled: " + c.cancel_reason
                              : "denied by the operator " + c.approver + ": " + c.approval_reason) +
          ". Nothing was changed; tell the user.";
      break;
    case CommandState::kLeased:
      outcome = "in_progress";
      result.message = "Not executed again: " + tool + " is already running (" + Where(c) +
                       ", lease of " + c.lease_owner + "). Wait for its result.";
      break;
    case CommandState::kUncertain:
      outcome = "uncertain";
      result.message = "Not executed again: the outcome of an earlier attempt of " + tool +
                       " is unknown (" + c.last_error + "; " + Where(c) +
                       ") and could not be checked yet. Do not retry it; tell the user it is "
                       "being checked.";
      break;
    case CommandState::kPending:
    case CommandState::kApproved:
      outcome = "awaiting_approval";
      result.message = HeldForApproval(tool, result.decision, Where(c));
      break;
  }
  StageCallRecord(call, true, std::move(outcome));
}

Result<std::vector<CallResult>> Session::ResumeApproved(const ToolExecutor& execute) {
  return ResumeApproved(
      [&execute](const ProposedCall& c, const ToolContext&) { return execute(c); });
}

Result<std::vector<CallResult>> Session::ResumeApproved(const ContextToolExecutor& execute) {
  std::vector<CallResult> out;
  if (!commands_) return out;
  Commands& cmd = *commands_;
  if (Status settled = Commands::Settle(*this); !settled.ok()) return settled;
  auto listed = cmd.store.ListCommands(cmd.run);
  if (!listed) return listed.error();
  for (const Command& c : *listed) {
    if (!c.compensates.empty()) continue;
    ProposedCall call = CallOf(c);
    if (OperatorApproved(c)) {
      cmd.BindLookup(c.call.tool);
      CallResult r;
      // A failed write-ahead commit leaves it approved: the next call runs it.
      if (auto leased = Commands::LeaseReady(*this, call, c, r)) {
        // Settled at once: the next approved command's lease follows at once.
        Commands::RunLeased(*this, call, *leased, execute, r, /*defer=*/false);
      }
      out.push_back(std::move(r));
    } else if (c.state == CommandState::kCancelled && !c.approver.empty()) {
      // Denied by an operator: tell the model once (a "cancelled" call record says it was).
      bool told = false;
      for (const CallRecord& rec : ledger_->working().calls) {
        told = told || (rec.call.id == call.id && rec.outcome == "cancelled");
      }
      if (told) continue;
      CallResult r;
      r.decision_record = c.decision;
      r.decision.outcome = Outcome::kDeny;
      r.decision.rule_id = std::string(kApprovalRule);
      r.decision.reason = "denied by " + c.approver + ": " + c.approval_reason;
      ReportCommand(call, c, r);
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace taskledger
