// The sandbox against hostile rules: every file in hostile/ must end in a
// fail-closed denial naming the rule, within a (generous) time bound, and the
// next check on the same checker must be healthy.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "policy_test_util.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// A benign rule that exercises the libraries and the ledger, run after each
// attack to prove the state is intact.
const char* kHealthy = R"lua(
rule { id = "healthy.check", tools = {"write_safe"}, check = function(call, ledger)
  if string.rep("ab", 2) ~= "abab" then return deny("string.rep was tampered with") end
  if not string.find("order_7", "^order_%d+$") then return deny("string.find broken") end
  if ledger.fact("status") ~= "pending" then return deny("ledger view broken") end
  if call.args.order_id ~= "#W1" then return deny("arguments changed") end
  if type(deny) ~= "function" then return deny("verdicts broken") end
  return allow()
end }
)lua";

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

}  // namespace

TEST_CASE("every hostile rule fails closed and leaves the checker healthy", "[policy][sandbox]") {
  std::filesystem::path dir = std::filesystem::path(TASKLEDGER_SOURCE_DIR) / "tests/policy/hostile";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".lua") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 30);
  LedgerState s = StateOf({{"facts", {{"status", "pending"}}}});
  ProposedCall attack = CallOf("write_attack", {{"order_id", "#W1"}});
  ProposedCall safe = CallOf("write_safe", {{"order_id", "#W1"}});
  for (const auto& f : files) {
    std::string name = f.stem().string();
    DYNAMIC_SECTION(name) {
      auto pack = MakePack(ReadFile(f) + kHealthy);
      auto checker = MakeChecker(pack);
      auto start = std::chrono::steady_clock::now();
      PolicyDecision d = checker->Check(attack, s, {"conv", 1}, kNow);
      auto elapsed = std::chrono::steady_clock::now() - start;
      INFO(d.reason);
      CHECK(d.outcome == Outcome::kDeny);
      CHECK(d.rule_id == "hostile." + name);
      CHECK(d.reason.rfind("policy error in rule hostile." + name + ": ", 0) == 0);
      REQUIRE(d.rules.size() == 1);
      CHECK(d.rules[0].error);
      CHECK(elapsed < std::chrono::seconds(5));
      // The state is healthy afterwards, and stays so on a second attack.
      for (int round = 0; round < 2; ++round) {
        PolicyDecision ok = checker->Check(safe, s, {"conv", 1}, kNow);
        INFO(ok.reason);
        CHECK(ok.outcome == Outcome::kAllow);
        CHECK(checker->Check(attack, s, {"conv", 1}, kNow).outcome == Outcome::kDeny);
      }
      CHECK(checker->memory_in_use() < CheckerLimits{}.memory_limit_bytes);
    }
  }
}

TEST_CASE("specific limits report what was exceeded", "[policy][sandbox]") {
  // A long deadline, so a busy machine cannot turn a budget or memory
  // failure into a deadline failure.
  CheckerLimits limits;
  limits.deadline_ms = 60'000;
  auto run = [&](const std::string& body) {
    auto checker = MakeChecker(
        MakePack("rule { id = 'r', tools = {'write_x'}, check = function(call, ledger)\n" + body +
                 "\nend }"),
        limits);
    return checker->Check(CallOf("write_x"), LedgerState{}, {}, kNow).reason;
  };
  CHECK_THAT(run("while true do end"), Catch::Contains("instruction budget"));
  CHECK_THAT(run("local t = {} for i = 1, 1e7 do t[i] = ('x'):rep(1 << 20) .. i end"),
             Catch::Contains("memory limit"));
  CHECK_THAT(run("string.find(string.rep('a', 400), '.-.-.-b')"), Catch::Contains("backtrack"));
  CHECK_THAT(run("return undefined_name"), Catch::Contains("undeclared global 'undefined_name'"));
  CHECK_THAT(run("x = 1"), Catch::Contains("rules may not write globals"));
  CHECK_THAT(run("call.args.a = 1"), Catch::Contains("read-only"));
  CHECK_THAT(run("error({})"), Catch::Contains("error object is a table value"));
  CHECK_THAT(run("error(nil)"), Catch::Contains("error object is nil"));
  // Patterns that stay cheap keep working, including on longer subjects.
  CHECK(run("if string.match(('k=v '):rep(20), '^(%w+)=(%w+)') ~= 'k' then return deny('bad') end "
            "return deny('matched')") == "matched");
  CHECK(run("return deny(tostring(select(2, ('ab'):rep(1000):gsub('a', 'c'))))") == "1000");
  CHECK(run("return deny(tostring(string.find(('x'):rep(60000) .. 'y', 'y', 1, true)))") ==
        "60001");
}

TEST_CASE("the wall-clock deadline stops a rule the instruction budget would not",
          "[policy][sandbox]") {
  CheckerLimits limits;
  limits.instruction_budget = int64_t{1} << 50;
  limits.deadline_ms = 50;
  auto checker = MakeChecker(
      MakePack("rule { id = 'r', tools = {'write_x'}, check = function() while true do end end }"),
      limits);
  auto start = std::chrono::steady_clock::now();
  PolicyDecision d = checker->Check(CallOf("write_x"), LedgerState{}, {}, kNow);
  CHECK_THAT(d.reason, Catch::Contains("deadline of 50 ms exceeded"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("a pack's top level is sandboxed too", "[policy][sandbox]") {
  const char* manifest = R"({"name": "t"})";
  auto loop = RulePack::FromFiles({{"pack.json", manifest}, {"rules.lua", "while true do end"}});
  REQUIRE_FALSE(loop);
  CHECK(loop.error().code() == StatusCode::kLimitExceeded);
  auto io = RulePack::FromFiles({{"pack.json", manifest}, {"rules.lua", "io.write('x')"}});
  REQUIRE_FALSE(io);
  CHECK_THAT(io.error().message(), Catch::Contains("undeclared global 'io'"));
  // Helpers may be declared at load time, but not over builtins.
  auto helper = RulePack::FromFiles({{"pack.json", manifest},
                                     {"rules.lua",
                                      "function helper() return 1 end\n"
                                      "rule { id = 'r', tools = 'w', check = function() "
                                      "if helper() == 1 then return allow() end end }"}});
  CHECK(helper.has_value());
  auto clobber = RulePack::FromFiles({{"pack.json", manifest}, {"rules.lua", "allow = deny"}});
  REQUIRE_FALSE(clobber);
  CHECK_THAT(clobber.error().message(), Catch::Contains("already defined"));
}

TEST_CASE("tostring gives what Lua's own gives, a string as it is", "[policy][sandbox]") {
  auto checker = MakeChecker(MakePack(R"lua(
rule { id = "t", tools = {"write_probe"}, check = function(call)
  local s = call.args.s
  local shown = setmetatable({}, {__tostring = function() return "shown" end})
  local parts = {tostring(s), tostring(s, 2), tostring(1), tostring(1.0), tostring(-0.0),
                 tostring(2^63), tostring(nil), tostring(true), tostring(shown),
                 tostring(allow()), tostring(deny("x")), tostring(rawequal(tostring(s), s))}
  local ok, err = pcall(tostring)
  return deny(table.concat(parts, "|") .. "|" .. tostring(ok) .. "|" .. err)
end }
)lua"));
  PolicyDecision d = checker->Check(CallOf("write_probe", {{"s", "abc"}}), LedgerState{}, {}, kNow);
  REQUIRE(d.rule_id == "t");
  CHECK_THAT(d.reason, Catch::StartsWith("abc|abc|1|1.0|-0.0|9.2233720368548e+18|nil|true|shown|"
                                         "allow|deny: x|true|false|"));
  CHECK_THAT(d.reason, Catch::Contains("bad argument #1 to 'tostring' (value expected)"));
}
