// rule{ facts = fn }: the checker calls fn(call, ledger) once per check for
// every rule declared with that function, on first use, and hands its value
// to check() as the third argument; rules without facts are called as before.
#include <catch2/catch.hpp>

#include "policy_test_util.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

LedgerState WithX(const std::string& x) { return StateOf({{"facts", {{"x", x}}}}); }

// Counts its runs in a file-level upvalue, which makes the count observable.
const char* kCounting = R"(
local runs = 0
local function about(call, ledger)
  runs = runs + 1
  return {tool = call.tool, x = ledger.fact("x")}
end
)";

}  // namespace

TEST_CASE("rule facts run once per check for every rule declared with them", "[policy][facts]") {
  auto checker = MakeChecker(MakePack(std::string(kCounting) + R"(
rule { id = 'a', tools = {'write_probe'}, priority = 3, facts = about,
       check = function(call, ledger, f) assert(f.x == ledger.fact('x')); return allow() end }
rule { id = 'b', tools = {'write_probe'}, priority = 2, facts = about,
       check = function(call, ledger, f) return allow() end }
rule { id = 'c', tools = {'write_probe'}, priority = 1, facts = about,
       check = function(call, ledger, f)
         return deny(f.tool .. ' ' .. f.x .. ' after ' .. runs .. ' run')
       end }
)"));
  PolicyDecision d = checker->Check(CallOf("write_probe"), WithX("one"), {"conv", 1}, kNow);
  CHECK(d.rule_id == "c");
  CHECK(d.reason == "write_probe one after 1 run");
  // The next check sees its own ledger, even with the same view key.
  d = checker->Check(CallOf("write_probe"), WithX("two"), {"conv", 2}, kNow);
  CHECK(d.reason == "write_probe two after 2 run");
  d = checker->Check(CallOf("write_probe"), WithX("two"), {"conv", 2}, kNow);
  CHECK(d.reason == "write_probe two after 3 run");
}

TEST_CASE("rule facts run only for the checks of rules that declare them", "[policy][facts]") {
  auto checker = MakeChecker(MakePack(std::string(kCounting) + R"(
local other_runs = 0
local function other(call, ledger) other_runs = other_runs + 1; return false end
rule { id = 'plain', tools = {'write_*'}, priority = 3,
       check = function(call, ledger, f)
         assert(f == nil, 'a rule without facts gets no third argument')
         return allow()
       end }
rule { id = 'a', tools = {'write_a'}, priority = 2, facts = about,
       check = function(call, ledger, f) return allow() end }
rule { id = 'o', tools = {'write_a'}, priority = 1, facts = other,
       check = function(call, ledger, f)
         return deny('f ' .. tostring(f) .. ' runs ' .. runs .. ' other ' .. other_runs)
       end }
rule { id = 'b', tools = {'write_b'}, priority = 1,
       check = function(call, ledger) return deny('runs ' .. runs .. ' other ' .. other_runs) end }
)"));
  // write_b's rules declare no facts: neither function runs.
  PolicyDecision d = checker->Check(CallOf("write_b"), WithX("x"), {}, kNow);
  CHECK(d.rule_id == "b");
  CHECK(d.reason == "runs 0 other 0");
  // Two different functions each run once, and a false value is passed as is.
  d = checker->Check(CallOf("write_a"), WithX("x"), {}, kNow);
  CHECK(d.rule_id == "o");
  CHECK(d.reason == "f false runs 1 other 1");
  d = checker->Check(CallOf("write_b"), WithX("x"), {}, kNow);
  CHECK(d.reason == "runs 1 other 1");
}

TEST_CASE("an error in rule facts denies the check, naming the rule", "[policy][facts]") {
  auto checker = MakeChecker(MakePack(R"(
local function broken(call, ledger) error('no facts today') end
rule { id = 'ok', tools = {'write_probe'}, priority = 2,
       check = function(call, ledger) return allow() end }
rule { id = 'uses', tools = {'write_probe'}, priority = 1, facts = broken,
       check = function(call, ledger, f) return allow() end }
)"));
  PolicyDecision d = checker->Check(CallOf("write_probe"), WithX("x"), {}, kNow);
  CHECK_FALSE(d.allowed());
  CHECK(d.rule_id == "uses");
  CHECK(d.reason.find("policy error in rule uses") != std::string::npos);
  CHECK(d.reason.find("no facts today") != std::string::npos);
}

TEST_CASE("rule facts are read-only: a rule cannot change what later rules see",
          "[policy][facts]") {
  auto checker = MakeChecker(MakePack(R"(
local function about(call, ledger)
  return {verified = false, nested = {ok = false, deeper = {ok = false}}}
end
rule { id = 'writer', tools = {'write_probe'}, priority = 3, facts = about,
       check = function(call, ledger, f) f.verified = true; return allow() end }
rule { id = 'nested', tools = {'write_nested'}, priority = 3, facts = about,
       check = function(call, ledger, f) f.nested.ok = true; return allow() end }
rule { id = 'deeper', tools = {'write_deeper'}, priority = 3, facts = about,
       check = function(call, ledger, f)
         for _, t in pairs(f.nested) do if type(t) == 'table' then t.ok = true end end
         return allow()
       end }
rule { id = 'reader', tools = {'write_*'}, priority = 1, facts = about,
       check = function(call, ledger, f)
         if f.verified or f.nested.ok or f.nested.deeper.ok then return allow() end
         return deny('not verified')
       end }
)"));
  // The write raises: the check is denied in the writer's name, never allowed.
  for (auto [tool, rule] : {std::pair{"write_probe", "writer"}, std::pair{"write_nested", "nested"},
                            std::pair{"write_deeper", "deeper"}}) {
    PolicyDecision d = checker->Check(CallOf(tool), WithX("x"), {}, kNow);
    INFO(tool);
    CHECK_FALSE(d.allowed());
    CHECK(d.rule_id == rule);
    CHECK(d.reason.find("policy error in rule") != std::string::npos);
    CHECK(d.reason.find("read-only") != std::string::npos);
  }
  // A rule that only reads gets the value as computed.
  PolicyDecision d = checker->Check(CallOf("write_other"), WithX("x"), {}, kNow);
  CHECK(d.rule_id == "reader");
  CHECK(d.reason == "not verified");
}

TEST_CASE("rule facts holding a cycle or money and records still read", "[policy][facts]") {
  auto checker = MakeChecker(MakePack(R"(
local function about(call, ledger)
  local t = {price = std.money("1.50"), order = ledger.record("order", "o1")}
  t.self = t
  return t
end
rule { id = 'loop', tools = {'write_probe'}, facts = about,
       check = function(call, ledger, f)
         local n = 0
         for k in pairs(f.self.order) do n = n + 1 end
         return deny(tostring(f.self.self.price + std.money("1")) .. ' ' ..
                     tostring(f.self == f.self) .. ' ' .. f.self.order.status .. ' ' .. n)
       end }
)"));
  PolicyDecision d = checker->Check(CallOf("write_probe"),
                                    StateOf({{"facts", {{"order.o1.status", "paid"}}}}), {}, kNow);
  CHECK(d.rule_id == "loop");
  CHECK(d.reason == "2.50 true paid 1");
}

TEST_CASE("rule facts that are not a function fail the pack load", "[policy][facts]") {
  nlohmann::json manifest = {{"name", "t"}, {"tools", {{"writes", {"write_*"}}}}};
  auto pack = RulePack::FromFiles({{"pack.json", manifest.dump()}, {"rules.lua", R"(
rule { id = 'bad', tools = {'write_probe'}, facts = {x = 1},
       check = function(call, ledger) return allow() end }
)"}});
  REQUIRE_FALSE(pack);
  CHECK(pack.error().message().find("bad: 'facts' must be a function") != std::string::npos);
}
