// The rule API: ledger lookups, provenance, grounding (observed), confirmation,
// call counting, and reuse of the ledger view while the state is unchanged.
#include <catch2/catch.hpp>

#include "policy_test_util.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// write_probe denies with a reason that reports what the rule saw, so each
// test can assert on the ledger functions from the outside.
std::unique_ptr<PolicyChecker> Probe(const std::string& expr) {
  return MakeChecker(MakePack(
      "rule { id = 'probe', tools = {'write_probe'}, check = function(call, ledger)\n"
      "  return deny(tostring(" + expr + "))\nend }\n"));
}

std::string Eval(const std::string& expr, const LedgerState& s, nlohmann::json args = nlohmann::json::object(),
                 int64_t now = kNow) {
  auto checker = Probe(expr);
  PolicyDecision d = checker->Check(CallOf("write_probe", std::move(args)), s, {}, now);
  INFO(d.reason);
  REQUIRE(d.rule_id == "probe");
  return d.reason;
}

}  // namespace

TEST_CASE("ledger lookups return live values by category", "[policy]") {
  LedgerState s = StateOf({{"version", 3},
                           {"facts", {{"order.W1.status", "pending"}, {"n", 5}}},
                           {"identifiers", {{"user_id", "ann_1"}}},
                           {"constraints", {{"limit", {{"$entry", {{"value", 1}, {"expires_in_seconds", -1}}}}}}},
                           {"conditions", {{"vip", true}}}});
  CHECK(Eval("ledger.fact('order.W1.status')", s) == "pending");
  CHECK(Eval("ledger.fact('n') + 1", s) == "6");
  CHECK(Eval("ledger.identifier('user_id')", s) == "ann_1");
  CHECK(Eval("ledger.condition('vip')", s) == "true");
  CHECK(Eval("ledger.constraint('limit')", s) == "nil");  // expired
  CHECK(Eval("ledger.fact('missing')", s) == "nil");
  CHECK(Eval("ledger.version .. '/' .. ledger.turn", s) == "3/4");
  CHECK(Eval("table.concat(ledger.keys('fact', 'order.'), ',')", s) == "order.W1.status");
  CHECK(Eval("#ledger.keys('facts')", s) == "2");
}

TEST_CASE("entry and verified expose provenance", "[policy]") {
  LedgerState s = StateOf({{"facts",
                            {{"tool_said", 1},
                             {"user_said", {{"$entry", {{"value", 2}, {"verified", false}}}}}}}});
  CHECK(Eval("ledger.verified('fact', 'tool_said')", s) == "true");
  CHECK(Eval("ledger.verified('fact', 'user_said')", s) == "false");
  CHECK(Eval("ledger.entry('fact', 'user_said').source", s) == "user");
  CHECK(Eval("ledger.entry('fact', 'tool_said').source", s) == "tool");
  CHECK(Eval("ledger.entry('fact', 'nothing')", s) == "nil");
  // A bad category is a rule error, and errors fail closed.
  auto checker = Probe("ledger.entry('facty', 'x')");
  PolicyDecision d = checker->Check(CallOf("write_probe"), s, {}, kNow);
  CHECK(d.outcome == Outcome::kDeny);
  CHECK(d.reason.find("policy error in rule probe") == 0);
}

TEST_CASE("observed grounds arguments in tool outputs only", "[policy]") {
  LedgerState s = StateOf(
      {{"facts",
        {{"order.W1.items", nlohmann::json::array({"item_7", "item_8"})},
         {"order.W1.total", 12.0},
         {"claimed", {{"$entry", {{"value", "item_9"}, {"verified", false}}}}}}}});
  CHECK(Eval("ledger.observed(call.args.item)", s, {{"item", "item_8"}}) == "true");
  CHECK(Eval("ledger.observed(call.args.item)", s, {{"item", "item_9"}}) == "false");  // user claim
  CHECK(Eval("ledger.observed('made_up')", s) == "false");
  CHECK(Eval("ledger.observed(12)", s) == "true");  // 12 and 12.0 are the same number
  CHECK(Eval("ledger.observed('12')", s) == "false");
  CHECK(Eval("ledger.observed(nil)", s) == "false");
}

TEST_CASE("the observed index is reused for one view key and rebuilt when it changes", "[policy]") {
  auto checker = Probe("ledger.observed('x')");
  LedgerState with = StateOf({{"facts", {{"k", "x"}}}});
  LedgerState without = StateOf({{"facts", {{"k", "y"}}}});
  ProposedCall call = CallOf("write_probe");
  CHECK(checker->Check(call, with, {"conv", 1}, kNow).reason == "true");
  // Same key: the index built for generation 1 is reused (the contract says
  // equal keys mean equal states, so the stale answer proves the reuse).
  CHECK(checker->Check(call, without, {"conv", 1}, kNow).reason == "true");
  CHECK(checker->Check(call, without, {"conv", 2}, kNow).reason == "false");
  // An empty key never reuses.
  CHECK(checker->Check(call, with, {}, kNow).reason == "true");
  CHECK(checker->Check(call, without, {}, kNow).reason == "false");
}

TEST_CASE("the reused view still honours wall-clock expiry", "[policy]") {
  auto checker = Probe("ledger.observed('x')");
  LedgerState s = StateOf({{"facts", {{"k", {{"$entry", {{"value", "x"}, {"expires_in_seconds", 10}}}}}}}});
  ProposedCall call = CallOf("write_probe");
  CHECK(checker->Check(call, s, {"conv", 1}, kNow).reason == "true");
  CHECK(checker->Check(call, s, {"conv", 1}, kNow + 9'000).reason == "true");
  CHECK(checker->Check(call, s, {"conv", 1}, kNow + 10'000).reason == "false");
}

TEST_CASE("confirmed needs a live confirmation not bound to another action", "[policy]") {
  nlohmann::json args = {{"order_id", "#W1"}};
  auto with_action = [&](nlohmann::json action) {
    return StateOf({{"conditions", {{"confirmation", {{"text", "yes"}, {"action", action}}}}}});
  };
  CHECK(Eval("ledger.confirmed(call)", LedgerState{}, args) == "false");
  CHECK(Eval("ledger.confirmed(call)", with_action(nullptr), args) == "true");
  CHECK(Eval("ledger.confirmed(call)",
             with_action({{"tool", "write_probe"}, {"args", args}}), args) == "true");
  CHECK(Eval("ledger.confirmed(call)",
             with_action({{"tool", "write_probe"}, {"args", {{"order_id", "#W2"}}}}), args) == "false");
  CHECK(Eval("ledger.confirmed(call)", with_action({{"tool", "write_other"}, {"args", args}}), args) ==
        "false");
  LedgerState expired = StateOf(
      {{"conditions",
        {{"confirmation",
          {{"$entry", {{"value", {{"text", "yes"}, {"action", nullptr}}}, {"expires_in_seconds", -5}}}}}}}});
  CHECK(Eval("ledger.confirmed(call)", expired, args) == "false");
}

TEST_CASE("calls counts successful calls by tool glob and argument", "[policy]") {
  LedgerState s = StateOf(
      {{"calls",
        {{{"tool", "write_refund"}, {"arguments", {{"order_id", "#W1"}, {"amount", 5}}}},
         {{"tool", "write_refund"}, {"arguments", {{"order_id", "#W2"}, {"amount", 5.0}}}},
         {{"tool", "write_refund"}, {"arguments", {{"order_id", "#W1"}}}, {"outcome", "denied"}},
         {{"tool", "write_exchange"}, {"arguments", {{"order_id", "#W1"}}}, {"outcome", "ok"}}}}});
  CHECK(Eval("ledger.calls('write_refund')", s) == "2");
  CHECK(Eval("ledger.calls('write_*')", s) == "3");
  CHECK(Eval("ledger.calls('write_refund', 'order_id', '#W1')", s) == "1");
  CHECK(Eval("ledger.calls('write_refund', 'amount', 5)", s) == "2");
  CHECK(Eval("ledger.calls('get_*')", s) == "0");
}

TEST_CASE("rules see the call's tool, id and arguments", "[policy]") {
  nlohmann::json args = {{"order_id", "#W1"}, {"items", {"a", "b", "c"}}, {"meta", {{"k", 1}}}};
  CHECK(Eval("call.tool .. ' ' .. call.id", LedgerState{}, args) == "write_probe c1");
  CHECK(Eval("#call.args.items .. call.args.items[3]", LedgerState{}, args) == "3c");
  CHECK(Eval("call.args.meta.k", LedgerState{}, args) == "1");
  CHECK(Eval("(function() local n = 0 for k, v in pairs(call.args) do n = n + 1 end return n end)()",
             LedgerState{}, args) == "3");
  CHECK(Eval("(function() local s = '' for i, v in ipairs(call.args.items) do s = s .. v end return s end)()",
             LedgerState{}, args) == "abc");
}
