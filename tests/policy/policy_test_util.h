// Helpers for the policy tests: building in-memory packs and states.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/checker.h"

namespace taskledger::testing {

inline constexpr int64_t kNow = 1'700'000'000'000;

// A pack named "t" whose writes are write_*, read-only tools get_*, plus the
// given Lua as rules.lua. REQUIRES: the pack loads (the test fails otherwise).
std::shared_ptr<const RulePack> MakePack(const std::string& lua,
                                         const std::string& unknown_tools = "deny");
std::unique_ptr<PolicyChecker> MakeChecker(const std::shared_ptr<const RulePack>& pack,
                                           CheckerLimits limits = {});
// Builds a state from the test "state" form (REQUIRES: it is well formed).
LedgerState StateOf(const nlohmann::json& state);
ProposedCall CallOf(const std::string& tool, nlohmann::json args = nlohmann::json::object());

}  // namespace taskledger::testing
