// The `std` table of the rule API: exact money, list and set helpers,
// ISO-8601 times and durations against the decision's clock, key escaping,
// pack libraries loaded with require(), and hostile use of all of it staying
// inside the sandbox's limits.
#include <catch2/catch.hpp>

#include "policy_test_util.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

PolicyDecision Decide(const std::string& body, int64_t now = kNow, std::vector<PackFile> extra = {},
                      CheckerLimits limits = {}) {
  nlohmann::json manifest = {{"name", "t"}, {"tools", {{"writes", {"write_*"}}}}};
  std::vector<PackFile> files = {
      {"pack.json", manifest.dump()},
      {"rules.lua",
       "rule { id = 'probe', tools = {'write_probe'}, check = function(call, "
       "ledger)\n" +
           body + "\nend }\n"}};
  for (PackFile& f : extra) files.push_back(std::move(f));
  auto pack = RulePack::FromFiles(std::move(files));
  INFO((pack ? std::string() : pack.error().ToString()));
  REQUIRE(pack.has_value());
  auto checker = MakeChecker(pack.value(), limits);
  return checker->Check(CallOf("write_probe"), LedgerState{}, {}, now);
}

// The text of `expr` as the rule's deny reason.
std::string Eval(const std::string& expr, int64_t now = kNow) {
  PolicyDecision d = Decide("return deny(tostring(" + expr + "))", now);
  INFO(d.reason);
  REQUIRE_FALSE((!d.rules.empty() && d.rules[0].error));
  return d.reason;
}

std::string ErrorOf(const std::string& body) {
  PolicyDecision d = Decide(body);
  REQUIRE(d.rules.size() == 1);
  CHECK(d.rules[0].error);
  return d.reason;
}

}  // namespace

TEST_CASE("money is exact decimal arithmetic", "[policy][std]") {
  CHECK(Eval("std.money('0.1') + std.money('0.2')") == "0.3");  // 0.30000000000000004 in floats
  CHECK(Eval("std.money('138.73') + '11.27'") == "150.00");
  CHECK(Eval("std.money('10') - std.money('0.01')") == "9.99");
  CHECK(Eval("std.money('19.99') * 3") == "59.97");
  CHECK(Eval("-std.money('1.5')") == "-1.5");
  CHECK(Eval("std.money(10.5) + 0.25") == "10.75");  // numbers from tool outputs
  CHECK(Eval("std.money('0.1') + std.money('0.2') == std.money('0.3')") == "true");
  CHECK(Eval("std.money('2.50') == std.money('2.5')") == "true");
  CHECK(Eval("std.money('2.5') < 3") == "true");
  CHECK(Eval("std.money('3.001') <= std.money('3')") == "false");
  CHECK(Eval("std.same(std.money('5.0'), 5)") == "true");
  CHECK(Eval("std.money('0.05')") == "0.05");
  CHECK(Eval("std.money('-0.05') + std.money('0.01')") == "-0.04");
  CHECK(Eval("std.money('7.25').number") == "7.25");
  CHECK(Eval("'total ' .. std.money('1.10')") == "total 1.10");
  CHECK(Eval("std.is_money(std.money(1)) and not std.is_money(1)") == "true");
  CHECK(ErrorOf("return deny(tostring(std.money('12,5')))").find("not a decimal number") !=
        std::string::npos);
  CHECK(ErrorOf("return deny(tostring(std.money('1') * 1.5))").find("multiplied by an integer") !=
        std::string::npos);
  CHECK(ErrorOf("return deny(tostring(std.money('900000000000000000') * 100))")
            .find("out of range") != std::string::npos);
  // Money values cannot be changed.
  CHECK(
      ErrorOf("local m = std.money('1'); m.units = 5; return allow()").find("cannot be changed") !=
      std::string::npos);
}

TEST_CASE("list helpers sum, count and pick extremes", "[policy][std]") {
  CHECK(Eval("std.sum({1, 2, 3.5})") == "6.5");
  CHECK(Eval("std.sum({std.money('0.1'), std.money('0.2'), 1})") == "1.3");
  CHECK(Eval("std.sum({})") == "0");
  CHECK(Eval("std.sum({{p = 2}, {p = 3}}, function(x) return x.p end)") == "5");
  CHECK(Eval("std.count({1, 2, 3, 4}, function(x) return x % 2 == 0 end)") == "2");
  CHECK(Eval("std.count({1, 2, 3})") == "3");
  CHECK(Eval("std.min({3, 1, 2}) .. std.max({3, 1, 2})") == "13");
  CHECK(Eval("std.min({})") == "nil");
  CHECK(Eval("std.max({std.money('1.10'), std.money('1.9')})") == "1.9");
  CHECK(Eval("table.concat(std.keys({b = 1, a = 2}), ',')") == "a,b");
  CHECK(Eval("table.concat(std.map({1, 2}, function(x) return x * 2 end), ',')") == "2,4");
  CHECK(ErrorOf("return deny(tostring(std.sum({1, 'x'})))").find("not a number or money") !=
        std::string::npos);
}

TEST_CASE("set operations over lists", "[policy][std]") {
  CHECK(Eval("std.subset({'a', 'b'}, {'b', 'c', 'a'})") == "true");
  CHECK(Eval("std.subset({'a', 'd'}, {'b', 'c', 'a'})") == "false");
  CHECK(Eval("std.subset({}, {})") == "true");
  CHECK(Eval("table.concat(std.difference({'a', 'b', 'c'}, {'b'}), ',')") == "a,c");
  CHECK(Eval("table.concat(std.intersection({'a', 'b', 'c'}, {'c', 'a'}), ',')") == "a,c");
  CHECK(Eval("table.concat(std.union({'a', 'b'}, {'b', 'c'}), ',')") == "a,b,c");
  CHECK(Eval("std.contains({1, 2}, 2) and not std.contains({1, 2}, 3)") == "true");
}

TEST_CASE("ISO-8601 times and durations against the decision clock", "[policy][std]") {
  CHECK(Eval("std.time('1970-01-01T00:00:00Z')") == "0");
  CHECK(Eval("std.time('2023-11-14T22:13:20Z')") == "1700000000000");
  CHECK(Eval("std.time('2023-11-14T22:13:20.5Z')") == "1700000000500");
  CHECK(Eval("std.time('2023-11-15T00:13:20+02:00')") == "1700000000000");
  CHECK(Eval("std.time('2023-11-14T17:13:20-0500')") == "1700000000000");
  CHECK(Eval("std.time('2024-02-29')") == "1709164800000");
  CHECK(Eval("std.time('2000-03-01T00:00') - std.time('2000-02-28T00:00')") == "172800000");
  CHECK(Eval("std.now()") == std::to_string(kNow));
  CHECK(Eval("std.since('2023-11-13T22:13:20Z') == std.days(1)") == "true");
  CHECK(Eval("std.since('2023-11-14T22:00:00Z') < std.hours(24)") == "true");
  CHECK(Eval("std.before('2023-01-01', '2023-01-02')") == "true");
  CHECK(Eval("std.duration('PT24H') == std.days(1)") == "true");
  CHECK(Eval("std.duration('P1DT2H30M') ") == "95400000");
  CHECK(Eval("std.duration('PT1.5S')") == "1500");
  CHECK(Eval("std.duration('P2W')") == "1209600000");
  for (const char* bad : {"2023-02-29", "2023-13-01", "2023-1-01", "2023-01-01T25:00",
                          "2023-01-01T10:00+5", "yesterday"}) {
    CHECK(ErrorOf(std::string("return deny(tostring(std.time('") + bad + "')))").find("std.time") !=
          std::string::npos);
  }
  for (const char* bad : {"P1M", "PT", "P", "PT1M2H", "1D", "PT1.5H"}) {
    CHECK(ErrorOf(std::string("return deny(tostring(std.duration('") + bad + "')))")
              .find("std.duration") != std::string::npos);
  }
}

TEST_CASE("std.key escapes ids into key segments", "[policy][std]") {
  CHECK(Eval("std.key('order', '#W1', 'status')") == "order.#W1.status");
  CHECK(Eval("std.key('order', 'a.b{c}*', 'status')") == "order.a%2Eb%7Bc%7D%2A.status");
  CHECK(Eval("std.unescape(std.escape('50% off.'))") == "50% off.");
}

TEST_CASE("packs share code through lib files and require", "[policy][std]") {
  std::vector<PackFile> lib = {
      {"lib/pricing.lua",
       "local M = {}\nfunction M.total(xs) return std.sum(xs, std.money) end\nreturn M\n"},
      {"lib/util/names.lua", "return {upper = function(s) return string.upper(s) end}\n"}};
  PolicyDecision d = Decide(
      "local p = require('pricing')\n"
      "return deny(tostring(p.total({'0.1', '0.2'})) .. require('util/names').upper('x') .. "
      "tostring(require('pricing') == p))",
      kNow, lib);
  CHECK(d.reason == "0.3Xtrue");
  // A library may not leak globals, may not be missing, and may not loop.
  d = Decide("require('leaky') return allow()", kNow, {{"lib/leaky.lua", "helper = 1\n"}});
  CHECK(d.reason.find("rules may not write globals") != std::string::npos);
  d = Decide("require('nope') return allow()");
  CHECK(d.reason.find("the pack has no lib/nope.lua") != std::string::npos);
  d = Decide("require('a') return allow()", kNow, {{"lib/a.lua", "return require('a')\n"}});
  CHECK(d.reason.find("requires itself") != std::string::npos);
  d = Decide("require('../rules') return allow()");
  CHECK(d.reason.find("is not a library name") != std::string::npos);
  // Library files are not run as top-level pack files.
  d = Decide("return deny('ran')", kNow, {{"lib/boom.lua", "error('should not run')\n"}});
  CHECK(d.reason == "ran");
}

TEST_CASE("hostile use of std stays inside the sandbox limits", "[policy][std]") {
  CheckerLimits tight;
  tight.instruction_budget = 200000;
  // A huge list through std.sum runs out of budget, and the checker stays healthy.
  PolicyDecision d =
      Decide("local t = {} for i = 1, 1e7 do t[i] = i end return deny(tostring(std.sum(t)))", kNow,
             {}, tight);
  CHECK(d.outcome == Outcome::kDeny);
  CHECK(d.reason.find("budget") != std::string::npos);
  // std cannot be replaced or extended by a rule, nor its money metatable reached.
  CHECK(ErrorOf("std.sum = nil return allow()").find("read-only") != std::string::npos);
  CHECK(Eval("getmetatable(std.money('1'))") == "money");
  CHECK(ErrorOf("setmetatable(std.money('1'), {}) return allow()").find("protected") !=
        std::string::npos);
  // An enormous pattern subject through std.time is refused by length first.
  CHECK(ErrorOf("return deny(tostring(std.time(string.rep('9', 100000))))").find("std.time") !=
        std::string::npos);
}

TEST_CASE("std.key reads every argument as tostring does", "[policy][std]") {
  CHECK(Eval("std.key('order', nil, 'status')") == "order.nil.status");
  CHECK(Eval("std.key('item', 12, true)") == "item.12.true");
  CHECK(Eval("std.key('x')") == "x");
  CHECK(Eval("#std.key()") == "0");
}
