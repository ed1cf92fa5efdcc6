// ledger.memo(fn): a value derived from the ledger, computed once per check
// however many rules ask for it, recomputed for the next check, handed out
// read-only at every depth, and failing closed on misuse (not a function,
// recursion, an error the rule caught).
#include <catch2/catch.hpp>

#include "policy_test_util.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// Rules "a" (priority 2) and "b" (priority 1) on write_probe, with `prelude`
// at file level; each rule's body is given.
std::unique_ptr<PolicyChecker> Checker(const std::string& prelude, const std::string& first,
                                       const std::string& second) {
  return MakeChecker(MakePack(prelude +
                              "\nrule { id = 'a', tools = {'write_probe'}, priority = 2, check = " +
                              "function(call, ledger)\n" + first + "\nend }\n" +
                              "rule { id = 'b', tools = {'write_probe'}, priority = 1, check = " +
                              "function(call, ledger)\n" + second + "\nend }\n"));
}

LedgerState WithX(const std::string& x) { return StateOf({{"facts", {{"x", x}}}}); }

// A memo counting how often it runs (a file-level upvalue: rules are free to
// keep one, which is what makes the count observable here).
const char* kCounting = R"(
local runs = 0
local function x_of(ledger)
  runs = runs + 1
  return ledger.fact("x")
end
)";

}  // namespace

TEST_CASE("ledger.memo runs its function once per check for every rule that asks",
          "[policy][memo]") {
  auto checker =
      Checker(kCounting, "assert(ledger.memo(x_of) == ledger.memo(x_of)); return allow()",
              "return deny(ledger.memo(x_of) .. ' after ' .. runs .. ' run')");
  PolicyDecision d = checker->Check(CallOf("write_probe"), WithX("one"), {"conv", 1}, kNow);
  CHECK(d.rule_id == "b");
  CHECK(d.reason == "one after 1 run");
  // The next check sees its own ledger: the value is computed again.
  d = checker->Check(CallOf("write_probe"), WithX("two"), {"conv", 2}, kNow);
  CHECK(d.reason == "two after 2 run");
  // Even with the same view key (same state), each check computes it afresh.
  d = checker->Check(CallOf("write_probe"), WithX("two"), {"conv", 2}, kNow);
  CHECK(d.reason == "two after 3 run");
}

TEST_CASE("ledger.memo hands its function the ledger and the call of the check", "[policy][memo]") {
  auto checker =
      Checker(R"(
local function about(ledger, call) return {tool = call.tool, x = ledger.fact("x")} end
)",
              "return allow()", "local a = ledger.memo(about); return deny(a.tool .. ' ' .. a.x)");
  CHECK(checker->Check(CallOf("write_probe"), WithX("one"), {}, kNow).reason == "write_probe one");
  CHECK(checker->Check(CallOf("write_probe"), WithX("two"), {}, kNow).reason == "write_probe two");
}

TEST_CASE("ledger.memo keeps nil and false results too", "[policy][memo]") {
  auto checker = Checker(R"(
local runs = 0
local function missing(ledger) runs = runs + 1; return ledger.fact("nope") end
local function no(ledger) runs = runs + 1; return false end
)",
                         "assert(ledger.memo(missing) == nil and ledger.memo(no) == false)\n"
                         "return allow()",
                         "ledger.memo(missing); ledger.memo(no); return deny('runs ' .. runs)");
  CHECK(checker->Check(CallOf("write_probe"), WithX("x"), {}, kNow).reason == "runs 2");
}

TEST_CASE("a table kept by ledger.memo is read-only for every rule", "[policy][memo]") {
  auto checker = Checker(R"(
local function list(ledger) return {ledger.fact("x"), "b"} end
)",
                         "local t = ledger.memo(list); assert(#t == 2 and t[1] == 'one')\n"
                         "t[3] = 'added'; return allow()",
                         "return deny(tostring(#ledger.memo(list)))");
  PolicyDecision d = checker->Check(CallOf("write_probe"), WithX("one"), {}, kNow);
  REQUIRE(d.rules.size() == 1);
  CHECK(d.rules[0].error);
  CHECK(d.outcome == Outcome::kDeny);
  CHECK(d.reason.find("read-only") != std::string::npos);
}

TEST_CASE("tables inside a value kept by ledger.memo are read-only at every depth",
          "[policy][memo]") {
  // A table with a metatable of the pack's own refused no write before: rule
  // "a" could change what rule "b" then read.
  auto checker = Checker(R"(
local function about(ledger) return {inner = setmetatable({x = ledger.fact("x")}, {})} end
)",
                         "ledger.memo(about).inner.x = 'changed'; return allow()",
                         "return deny(ledger.memo(about).inner.x)");
  PolicyDecision d = checker->Check(CallOf("write_probe"), WithX("one"), {}, kNow);
  REQUIRE(d.rules.size() == 1);
  CHECK(d.rules[0].error);
  CHECK(d.rule_id == "a");
  CHECK(d.reason.find("cannot set field 'x'") != std::string::npos);
  // Nor one a metatable of the pack's own hands out.
  checker = Checker(R"(
local inner = {x = "kept"}
local function about(ledger) return setmetatable({}, {__index = function() return inner end}) end
)",
                    "ledger.memo(about).any.x = 'changed'; return allow()",
                    "return deny(ledger.memo(about).other.x)");
  d = checker->Check(CallOf("write_probe"), WithX("one"), {}, kNow);
  REQUIRE(d.rules.size() == 1);
  CHECK(d.rules[0].error);
  CHECK(d.reason.find("cannot set field 'x'") != std::string::npos);
  for (const char* write : {"m.orders[1].items[2] = 'z'", "m.orders[1].items.n = 1",
                            "for _, o in pairs(m.orders) do o.id = 'z' end",
                            "for _, o in ipairs(m.orders) do o.id = 'z' end"}) {
    checker = Checker(R"(
local function about(ledger) return {orders = {{id = ledger.fact("x"), items = {"a", "b"}}}} end
)",
                      std::string("local m = ledger.memo(about); ") + write + "; return allow()",
                      "return deny(ledger.memo(about).orders[1].id)");
    d = checker->Check(CallOf("write_probe"), WithX("one"), {}, kNow);
    INFO(write);
    REQUIRE(d.rules.size() == 1);
    CHECK(d.rules[0].error);
    CHECK(d.reason.find("read-only") != std::string::npos);
  }
}

TEST_CASE("nested tables kept by ledger.memo read like the tables they are", "[policy][memo]") {
  // Reads, #, pairs and ipairs work at every depth; reading the same inner
  // table again gives the same proxy, in this check and in the next.
  auto checker = Checker(R"(
local CONST = {limit = 3}
local seen
local function about(ledger)
  return {const = CONST, orders = {{id = ledger.fact("x"), items = {"a", "b"}}, {id = "o2"}}}
end
)",
                         R"(local m = ledger.memo(about)
assert(m.orders == m.orders and m.orders[1] == m.orders[1])
seen = seen or m.const
assert(seen == m.const and m.const.limit == 3)
return allow())",
                         R"(local m, ids, n = ledger.memo(about), {}, 0
for i, o in ipairs(m.orders) do ids[i] = o.id end
for k, o in pairs(m.orders[1]) do n = n + 1 end
return deny(table.concat(ids, ",") .. " " .. #m.orders[1].items .. " " .. n))");
  for (const char* x : {"one", "two"}) {
    PolicyDecision d = checker->Check(CallOf("write_probe"), WithX(x), {}, kNow);
    REQUIRE(d.rules.size() == 2);
    CHECK_FALSE(d.rules[0].error);
    CHECK(d.reason == std::string(x) + ",o2 2 2");
  }
}

TEST_CASE("ledger.memo refuses misuse with a message saying what is wrong", "[policy][memo]") {
  auto error_of = [](const std::string& prelude, const std::string& body) {
    auto checker = Checker(prelude, body, "return allow()");
    PolicyDecision d = checker->Check(CallOf("write_probe"), WithX("one"), {}, kNow);
    REQUIRE(!d.rules.empty());
    CHECK(d.rules[0].error);
    CHECK(d.outcome == Outcome::kDeny);
    return d.reason;
  };
  CHECK(error_of("", "return ledger.memo('users')").find("expects a function, got string") !=
        std::string::npos);
  CHECK(error_of("local self_ref\nself_ref = function(ledger) return ledger.memo(self_ref) end",
                 "return ledger.memo(self_ref)")
            .find("asks for its own value") != std::string::npos);
  CHECK(error_of("local function fn(ledger) return ledger.fact end", "return ledger.memo(fn)")
            .find("returned a function") != std::string::npos);
}

TEST_CASE("ledger.memo runs a function again after an error the rule caught", "[policy][memo]") {
  auto checker = Checker(R"(
local runs = 0
local function flaky(ledger)
  runs = runs + 1
  if runs == 1 then error("first run fails") end
  return "ok"
end
)",
                         "local ok = pcall(ledger.memo, flaky); assert(not ok)\n"
                         "return deny(ledger.memo(flaky) .. ' ' .. runs)",
                         "return allow()");
  PolicyDecision d = checker->Check(CallOf("write_probe"), WithX("one"), {}, kNow);
  CHECK(d.rule_id == "a");
  CHECK(d.reason == "ok 2");
}

TEST_CASE("std.money and records kept by ledger.memo keep working", "[policy][memo]") {
  auto checker = Checker(R"(
local function total(ledger) return std.money("1.10") + std.money("2.20") end
local function order(ledger) return ledger.record("order", "#1") end
)",
                         "return allow()",
                         "return deny(tostring(ledger.memo(total) + std.money('0.70')) .. ' ' .. "
                         "ledger.memo(order).status)");
  LedgerState s = StateOf({{"facts", {{"order.#1.status", "pending"}}}});
  CHECK(checker->Check(CallOf("write_probe"), s, {}, kNow).reason == "4.00 pending");
}

TEST_CASE("ledger.memo keeps each value when rules alternate between functions", "[policy][memo]") {
  auto checker =
      Checker(R"(
local runs = 0
local function f(ledger) runs = runs + 1; return ledger.fact("x") end
local function g(ledger) runs = runs + 1; return {y = ledger.fact("x") .. "!"} end
local function none(ledger) runs = runs + 1; return nil end
)",
              "local x = ledger.fact('x')\n"
              "assert(ledger.memo(f) == x and ledger.memo(g).y == x .. '!')\n"
              "assert(ledger.memo(f) == x and ledger.memo(f) == x)\n"
              "assert(ledger.memo(none) == nil and ledger.memo(none) == nil)\n"
              "return allow()",
              "local v = ledger.memo(g).y .. ' ' .. ledger.memo(f)\n"
              "return deny(v .. ' ' .. tostring(ledger.memo(none)) .. ' runs ' .. runs)");
  CHECK(checker->Check(CallOf("write_probe"), WithX("one"), {}, kNow).reason ==
        "one! one nil runs 3");
  // The next check (another ledger) computes all three again, the last one asked included.
  CHECK(checker->Check(CallOf("write_probe"), WithX("two"), {}, kNow).reason ==
        "two! two nil runs 6");
}
