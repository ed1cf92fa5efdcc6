// Policy test cases (tests/*.json, docs/rule-api.md "Policy tests") as the
// `policy test`, `policy check` and `policy coverage` verbs read them: the
// call of a case and its decision after the case's "events" or "state".
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"
#include "taskledger/base/tool_call.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/decision.h"

namespace taskledger::cli {

// {"tool", "id"?, "arguments"?} as a call; InvalidArgument naming the field.
Result<ProposedCall> ParsePolicyCall(const nlohmann::json& j);

// Decides case `c`'s call after its "events" (replayed through a Session, as
// `replay` would; the call is appended as the next call, so a "yes" right
// before it confirms it) or on its "state". `rules` holds every rule that ran,
// in order, with its outcome (and, for a "state" case, its reason and log).
Result<PolicyDecision> DecidePolicyCase(const std::shared_ptr<const RulePack>& pack,
                                        const nlohmann::json& c, const ProposedCall& call);

}  // namespace taskledger::cli
