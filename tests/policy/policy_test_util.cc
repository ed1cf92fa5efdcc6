// Helpers for the policy tests (see policy_test_util.h).
#include "policy_test_util.h"

#include <catch2/catch.hpp>

#include "taskledger/policy/test_state.h"

namespace taskledger::testing {

std::shared_ptr<const RulePack> MakePack(const std::string& lua, const std::string& unknown_tools) {
  nlohmann::json manifest = {{"name", "t"},
                             {"tools", {{"read_only", {"get_*"}}, {"writes", {"write_*"}}}},
                             {"unknown_tools", unknown_tools}};
  auto pack = RulePack::FromFiles({{"pack.json", manifest.dump()}, {"rules.lua", lua}});
  INFO((pack ? std::string() : pack.error().ToString()));
  REQUIRE(pack.has_value());
  return pack.value();
}

std::unique_ptr<PolicyChecker> MakeChecker(const std::shared_ptr<const RulePack>& pack,
                                           CheckerLimits limits) {
  auto checker = PolicyChecker::Create(pack, limits);
  INFO((checker ? std::string() : checker.error().ToString()));
  REQUIRE(checker.has_value());
  return std::move(checker.value());
}

LedgerState StateOf(const nlohmann::json& state) {
  auto s = LoadTestState(state, kNow);
  INFO((s ? std::string() : s.error().ToString()));
  REQUIRE(s.has_value());
  return s.value();
}

ProposedCall CallOf(const std::string& tool, nlohmann::json args) {
  return ProposedCall{"c1", tool, std::move(args)};
}

}  // namespace taskledger::testing
