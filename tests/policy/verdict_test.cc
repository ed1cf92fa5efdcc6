// Verdicts are values: what allow()/deny()/require_approval()/confirm()
// return can be kept in a variable, passed to and returned from a helper and
// still carries its reason; a rule that returns anything but exactly one
// verdict fails closed with a message saying what is wrong.
#include <catch2/catch.hpp>

#include "policy_test_util.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

PolicyDecision Decide(const std::string& body) {
  auto checker = MakeChecker(
      MakePack("local function why(n) return deny('computed reason ' .. n) end\n"
               "local function ask(q) local v = confirm(q); return v end\n"
               "rule { id = 'r', tools = {'write_x'}, check = function(call, ledger)\n" +
               body + "\nend }\n"));
  return checker->Check(CallOf("write_x"), StateOf({{"version", 0}}), {}, kNow);
}

}  // namespace

TEST_CASE("a verdict kept in a variable or returned by a helper keeps its reason",
          "[policy][verdict]") {
  PolicyDecision d = Decide("local d = why(3); return d");
  CHECK(d.outcome == Outcome::kDeny);
  CHECK(d.rule_id == "r");
  CHECK(d.reason == "computed reason 3");
  REQUIRE(d.rules.size() == 1);
  CHECK_FALSE(d.rules[0].error);

  d = Decide("return ask('ship to the new address?')");
  CHECK(d.outcome == Outcome::kConfirm);
  CHECK(d.reason == "ship to the new address?");

  d = Decide("local verdicts = {require_approval('over the refund limit')}; return verdicts[1]");
  CHECK(d.outcome == Outcome::kRequireApproval);
  CHECK(d.reason == "over the refund limit");

  d = Decide("local v = allow(); return v");
  CHECK(d.outcome == Outcome::kAllow);
  CHECK(d.rules.at(0).reason.empty());
}

TEST_CASE("a verdict prints as what it is and cannot be opened or forged", "[policy][verdict]") {
  CHECK(Decide("return deny(tostring(deny('no')) .. ' | ' .. tostring(allow()))").reason ==
        "deny: no | allow");
  CHECK(Decide("return deny(tostring(getmetatable(deny('x'))))").reason == "verdict");
  // setmetatable on a verdict, or a table dressed up as one, is no verdict.
  PolicyDecision d = Decide("return setmetatable({}, {__name = 'taskledger.verdict'})");
  CHECK(d.outcome == Outcome::kDeny);
  CHECK(d.rules.at(0).error);
  CHECK(d.reason.find("check returned table") != std::string::npos);
  d = Decide("local ok = pcall(setmetatable, deny('x'), {}); return deny(tostring(ok))");
  CHECK(d.reason == "false");
}

TEST_CASE("a rule returning more or less than one verdict fails closed and says so",
          "[policy][verdict]") {
  PolicyDecision d = Decide("return allow(), deny('x')");
  CHECK(d.outcome == Outcome::kDeny);
  REQUIRE(d.rules.size() == 1);
  CHECK(d.rules[0].error);
  CHECK(d.reason.find("returned 2 values") != std::string::npos);
  CHECK(d.reason.find("exactly one verdict") != std::string::npos);

  d = Decide("return");
  CHECK(d.outcome == Outcome::kDeny);
  CHECK(d.rules.at(0).error);
  CHECK(d.reason.find("check returned nothing") != std::string::npos);

  // A non-allow verdict always has its text: deny() without one is an error
  // in the rule, never an empty reason.
  d = Decide("return deny('')");
  CHECK(d.outcome == Outcome::kDeny);
  CHECK(d.rules.at(0).error);
  CHECK(d.reason.find("deny() needs a non-empty reason") != std::string::npos);
}
