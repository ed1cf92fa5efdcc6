// Outcome names and the decision-log record (see decision.h). Pure functions.
#include "taskledger/policy/decision.h"

#include "taskledger/base/digest.h"

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

nlohmann::json DecisionLogRecord(const PolicyDecision& d, const ProposedCall& call,
                                 const DecisionContext& ctx) {
  nlohmann::json rules = nlohmann::json::array();
  for (const RuleEvaluation& r : d.rules) {
    nlohmann::json e = {
        {"id", r.rule_id}, {"outcome", OutcomeName(r.outcome)}, {"reason", r.reason}};
    if (r.error) e["error"] = true;
    if (!r.log.empty()) e["log"] = r.log;
    rules.push_back(std::move(e));
  }
  nlohmann::json record = {
      {"conversation", ctx.conversation},
      {"turn", ctx.turn},
      {"version_seen", ctx.version_seen},
      {"staged_seen", ctx.staged_seen},
      {"tool", call.tool},
      {"call_id", call.id},
      {"args_hash", ArgsHash(call.arguments)},
      {"rules", std::move(rules)},
      {"decision", OutcomeName(d.outcome)},
      {"rule", d.rule_id},
      {"reason", d.reason},
      {"pack_version", d.pack_version},
      {"read_only", d.read_only},
      {"latency_us", d.latency_us},
  };
  // Its own field: the read-set evidence of the ledger is another one.
  if (d.provenance.is_array() && !d.provenance.empty()) record["provenance"] = d.provenance;
  return record;
}

}  // namespace taskledger
