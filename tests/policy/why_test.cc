// rule{ why = fn }: a rule written as "the reason to deny, or nil". Nothing,
// nil or false allows; a non-empty string denies with that text as the
// reason; anything else fails closed with a message naming the rule; a rule
// has a check or a why, never both.
#include <catch2/catch.hpp>

#include "policy_test_util.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// Rule "a" (priority 2) is a why with `body`; rule "b" (priority 1) allows
// and counts its runs in the decision's log.
PolicyDecision Decide(const std::string& body, nlohmann::json args = nlohmann::json::object()) {
  auto checker = MakeChecker(
      MakePack("local function F(call) return {limit = 10, who = call.args.who} end\n"
               "rule { id = 'a', tools = {'write_x'}, priority = 2, facts = F,\n"
               "       why = function(call, ledger, facts)\n" +
               body +
               "\nend }\n"
               "rule { id = 'b', tools = {'write_*'}, priority = 1, check = function()\n"
               "  log('b ran'); return allow() end }\n"));
  return checker->Check(CallOf("write_x", std::move(args)), StateOf({{"version", 0}}), {}, kNow);
}

}  // namespace

TEST_CASE("a why rule denies with the reason it returns and allows on nil", "[policy][why]") {
  PolicyDecision d = Decide(
      "if (call.args.n or 0) > facts.limit then\n"
      "  return 'n is ' .. call.args.n .. ', over the limit of ' .. facts.limit\n"
      "end",
      {{"n", 12}});
  CHECK(d.outcome == Outcome::kDeny);
  CHECK(d.rule_id == "a");
  CHECK(d.reason == "n is 12, over the limit of 10");
  REQUIRE(d.rules.size() == 1);  // the first deny ends the check: b never ran
  CHECK_FALSE(d.rules[0].error);

  for (const char* allowing : {"return nil", "return", "return false", "local x = 1",
                               "return call.args.n == 12 and 'twelve'"}) {
    INFO(allowing);
    d = Decide(allowing, {{"n", 3}});
    CHECK(d.outcome == Outcome::kAllow);
    REQUIRE(d.rules.size() == 2);
    CHECK(d.rules[0].outcome == Outcome::kAllow);
    CHECK(d.rules[0].reason.empty());
    CHECK(d.rules[1].log == std::vector<std::string>{"b ran"});
  }
}

TEST_CASE("a why rule returning anything but a reason or nil fails closed and says so",
          "[policy][why]") {
  struct Case {
    const char* body;
    const char* message;
  };
  for (const Case& c :
       {Case{"return true", "why returned boolean"}, Case{"return 3", "why returned number"},
        Case{"return deny('x')", "a verdict such as deny(...) belongs in check"},
        Case{"return {}", "why returned table"}, Case{"return ''", "why returned an empty reason"},
        Case{"return 'x', 'y'", "why returned 2 values"},
        Case{"return nil, 'y'", "why returned 2 values"}, Case{"facts.limit = 1", "read-only"}}) {
    INFO(c.body);
    PolicyDecision d = Decide(c.body);
    CHECK(d.outcome == Outcome::kDeny);
    CHECK(d.rule_id == "a");
    REQUIRE(d.rules.size() == 1);
    CHECK(d.rules[0].error);
    CHECK(d.reason.find("policy error in rule a") != std::string::npos);
    CHECK(d.reason.find(c.message) != std::string::npos);
  }
}

TEST_CASE("a rule declares a check or a why, not both", "[policy][why]") {
  const std::string manifest = R"({"name": "t", "tools": {"writes": ["write_*"]}})";
  auto both = RulePack::FromFiles(
      {{"pack.json", manifest},
       {"rules.lua",
        "rule { id = 'a', tools = {'write_x'}, check = function() return allow() end,\n"
        "       why = function() end }"}});
  REQUIRE_FALSE(both.has_value());
  CHECK(both.error().message().find("a: give either 'check'") != std::string::npos);

  auto not_function =
      RulePack::FromFiles({{"pack.json", manifest},
                           {"rules.lua", "rule { id = 'a', tools = {'write_x'}, why = 'x' }"}});
  REQUIRE_FALSE(not_function.has_value());
  CHECK(not_function.error().message().find("a: 'why' must be a function") != std::string::npos);

  auto neither = RulePack::FromFiles(
      {{"pack.json", manifest}, {"rules.lua", "rule { id = 'a', tools = {'write_x'} }"}});
  REQUIRE_FALSE(neither.has_value());
  CHECK(neither.error().message().find("a: 'check' must be a function") != std::string::npos);
}
