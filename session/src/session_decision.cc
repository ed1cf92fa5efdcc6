// Session, the decision half: checks a proposed call against the pack
// (Check, Authorize), stages its decision record and a refused call's record,
// makes the write-ahead commit an allowed write needs (CommitBeforeWrite),
// turns a store that cannot take that commit into a denial (DenyForStore),
// and words every denial for the model (DenialMessage). The loop around it
// (HandleToolCall) and what a call's output does to the ledger are in
// session.cc. Contracts in session.h; not thread-safe, like Session.
#include <memory>
#include <string>
#include <utility>

#include "internal/session_commands.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/session/session.h"

namespace taskledger {

CallResult Session::Check(const ProposedCall& call) {
  CallResult result;
  ViewKey key{ledger_->id().tenant + "\x1f" + ledger_->id().conversation + "\x1f" +
                  std::to_string(view_epoch_),
              ledger_->generation()};
  checker_->SetProvenance(provenance_.get());  // the checker may be shared: bound per check
  result.decision = checker_->Check(call, ledger_->working(), key, clock_->NowMs());
  checker_->SetProvenance(nullptr);
  // The evidence of each rule, for the decision record; right after the check
  // on its state, this cannot fail.
  (void)checker_->ResolveReads(result.decision, ledger_->working());
  DecisionContext ctx;
  ctx.conversation = ledger_->id().conversation;
  ctx.turn = ledger_->turn();
  ctx.version_seen = ledger_->version();
  ctx.staged_seen = ledger_->staged_updates();
  StageDecision(MakeDecisionRecord(result.decision, call, ctx), result);
  if (!result.decision.allowed()) {
    result.message = DenialMessage(call, result.decision, pack_->denial_hint());
    result.message_is_error = true;
  }
  return result;
}

CallResult Session::Authorize(const ProposedCall& call) {
  CallResult result = Check(call);
  FinishAuthorize(call, result);
  return result;
}

void Session::FinishAuthorize(const ProposedCall& call, CallResult& result) {
  const bool writes = !result.decision.read_only();
  if (result.decision.allowed()) {
    if (writes && commit_before_write_) {
      CommitBeforeWrite(call, result);
    } else if (!writes && store_down_reads_ == StoreDownReads::kDeny) {
      // One round trip on the session's own conversation: every store
      // implements it, and a tenant-scoped ACL user may run it.
      if (auto head = store_.Head(ledger_->id()); !head.has_value()) {
        DenyForStore(call, head.error(), result);
      }
    }
  }
  if (!result.decision.allowed()) StageCallRecord(call, writes, "denied");
}

// The one place the session builds a CallRecord: denied, run, reported and
// settled calls alike.
void Session::StageCallRecord(const ProposedCall& call, bool writes, std::string outcome) {
  ledger_->StageCall(CallRecord{ledger_->turn(), call, writes, std::move(outcome)});
}

bool Session::CommitBeforeWrite(const ProposedCall& call, CallResult& result,
                                std::optional<Entry>* consumed) {
  std::optional<Entry> confirmation = Commands::ConsumeForWrite(*this, call);
  auto committed = ledger_->Commit();
  if (committed.has_value()) {
    wrote_ahead_ = true;
    if (consumed != nullptr) *consumed = std::move(confirmation);
    return true;
  }
  // The call will not run, so the user's yes still stands: a retry once the
  // store is back must not need a second confirmation.
  if (confirmation) RestoreConfirmation(*confirmation);
  DenyForStore(call, committed.error(), result);
  return false;
}

void Session::DenyForStore(const ProposedCall& call, const Status& why, CallResult& result) {
  PolicyDecision& d = result.decision;
  d.outcome = Outcome::kDeny;
  if (why.code() == StatusCode::kInvalidArgument || why.code() == StatusCode::kLimitExceeded) {
    d.rule_id = std::string(kInvalidCommandRule);
    d.reason =
        "the call cannot be recorded as a command (" + why.ToString() + "); no change was made";
  } else if (why.code() == StatusCode::kConflict) {
    d.rule_id = std::string(kStateConflictRule);
    d.reason = "another writer changed this conversation's task state (" + why.ToString() +
               "); no change was made";
  } else {
    d.rule_id = std::string(kStoreUnavailableRule);
    d.reason = "the task-state store is unreachable (" + why.ToString() + "); no change was made";
  }
  d.rules.push_back(RuleEvaluation{d.rule_id, Outcome::kDeny, d.reason, false});
  StageDecisionRecord(call, d, result);
  result.message = DenialMessage(call, d, pack_->denial_hint());
  result.message_is_error = true;
}

void Session::StageDecisionRecord(const ProposedCall& call, const PolicyDecision& d,
                                  CallResult& result) {
  DecisionContext ctx;
  ctx.conversation = ledger_->id().conversation;
  ctx.turn = ledger_->turn();
  ctx.version_seen = ledger_->version();
  ctx.staged_seen = ledger_->staged_updates();
  StageDecision(MakeDecisionRecord(d, call, ctx), result);
}

void Session::StageDecision(DecisionRecord record, CallResult& result) {
  // One copy: the turn keeps `record`; the result, last_decision() and the
  // command a write reserves (ReserveReady) share this one, typed.
  last_record_ = std::make_shared<const DecisionRecord>(record);
  result.decision_record = CommandDecision(last_record_);
  last_encoded_ = false;
  ledger_->StageDecision(std::move(record));
}

const nlohmann::json& Session::last_decision() const {
  if (last_record_ && !last_encoded_) {
    last_decision_ = EncodeDecision(*last_record_);
    last_encoded_ = true;
  }
  return last_decision_;
}

session_internal::RuleText session_internal::DecidingRule(const PolicyDecision& decision) {
  return {decision.rule_id.empty() ? std::string("policy") : decision.rule_id,
          decision.reason.empty() ? std::string("no reason given") : decision.reason};
}

std::string DenialMessage(const ProposedCall& call, const PolicyDecision& decision,
                          std::string_view hint) {
  auto [rule, reason] = session_internal::DecidingRule(decision);
  if (rule == kStoreUnavailableRule) {
    return "Error: the call " + call.tool + " was not made: " + reason + " (" + rule +
           "). The policy allowed it, but taskledger does not run calls while the task state "
           "cannot be saved. Tell the user nothing was changed and try again later.";
  }
  if (rule == kInvalidCommandRule) {
    return "Error: the call " + call.tool + " was not made: " + reason + " (" + rule +
           "). The policy allowed it, but taskledger runs a write only once it is recorded, and "
           "this call was refused as invalid input; the same call will be refused again. Tell "
           "the user nothing was changed.";
  }
  if (rule == kStateConflictRule) {
    return "Error: the call " + call.tool + " was not made: " + reason + " (" + rule +
           "). The task state must be reloaded (Session::Rebase) and the call checked again "
           "before it may run.";
  }
  switch (decision.outcome) {
    case Outcome::kConfirm:
      return "Not executed: " + call.tool + " needs the user's explicit confirmation (" + rule +
             "). Ask the user: " + reason;
    case Outcome::kRequireApproval:
      // Nothing here says the request is held: only a session with a command
      // store holds it, and says so itself (Session::ReportCommand).
      return "Not executed: " + call.tool + " needs approval by a human operator (" + rule +
             "): " + reason + ". Nothing was changed; tell the user it needs an operator's " +
             "approval.";
    case Outcome::kAllow:
      return {};
    case Outcome::kDeny:
      break;
  }
  return "Error: policy violation, the call " + call.tool +
         " was blocked and made no change. "
         "Rule " +
         rule + ": " + reason + ". " + std::string(hint);
}

}  // namespace taskledger
