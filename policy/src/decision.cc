// Outcome names and the decision-log record, typed and as JSON (see
// decision.h). Pure functions.
#include "taskledger/policy/decision.h"

#include "taskledger/base/digest.h"
#include "taskledger/ledger/codec.h"

namespace taskledger {

std::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kAllow:
      return "allow";
    case Outcome::kConfirm:
      return "confirm";
    case Outcome::kRequireApproval:
      return "require_approval";
    case Outcome::kDeny:
      return "deny";
  }
  return "deny";
}

std::optional<Outcome> ParseOutcome(std::string_view name) {
  for (Outcome o :
       {Outcome::kAllow, Outcome::kConfirm, Outcome::kRequireApproval, Outcome::kDeny}) {
    if (OutcomeName(o) == name) return o;
  }
  return std::nullopt;
}

DecisionRecord MakeDecisionRecord(const PolicyDecision& d, const ProposedCall& call,
                                  const DecisionContext& ctx) {
  DecisionRecord r;
  r.conversation = ctx.conversation;
  r.turn = ctx.turn;
  r.version_seen = ctx.version_seen;
  r.staged_seen = ctx.staged_seen;
  r.tool = call.tool;
  r.call_id = call.id;
  r.args_hash = ArgsHash(call.arguments);
  r.rules.reserve(d.rules.size());
  for (const RuleEvaluation& e : d.rules) {
    RuleResult& out = r.rules.emplace_back();
    out.id = e.rule_id.str();
    out.outcome = OutcomeName(e.outcome);
    out.reason = e.reason;
    out.error = e.error;
    out.log = e.log;
    out.reads = e.reads;
  }
  r.decision = OutcomeName(d.outcome);
  r.rule = d.rule_id;
  r.reason = d.reason;
  r.pack_version = d.pack_version.str();
  r.read_only = d.read_only();
  r.latency_us = d.latency_us;
  // Its own field: the ledger's read-set evidence is in rules[].reads.
  if (d.provenance.is_array() && !d.provenance.empty()) r.extra["provenance"] = d.provenance;
  return r;
}

nlohmann::json DecisionLogRecord(const PolicyDecision& d, const ProposedCall& call,
                                 const DecisionContext& ctx) {
  return EncodeDecision(MakeDecisionRecord(d, call, ctx));
}

}  // namespace taskledger
