// Rule packs: versions, classification globs, load errors, reloading a
// checker, and checkers on several threads sharing one pack.
#include <atomic>
#include <thread>

#include <catch2/catch.hpp>

#include "policy_test_util.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

const char* kManifest =
    R"({"name": "t", "tools": {"read_only": ["get_*"], "writes": ["write_*"]}})";

Result<std::shared_ptr<const RulePack>> Pack(const std::string& lua) {
  return RulePack::FromFiles({{"pack.json", kManifest}, {"rules.lua", lua}});
}

}  // namespace

TEST_CASE("the pack version follows the content of every file", "[policy]") {
  auto a = Pack("rule { id = 'r', tools = 'write_x', check = function() return allow() end }");
  auto b = Pack("rule { id = 'r', tools = 'write_x', check = function() return allow() end }");
  auto c = Pack("rule { id = 'r', tools = 'write_x', check = function() return deny('no') end }");
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  CHECK(a.value()->version() == b.value()->version());
  CHECK(a.value()->version() != c.value()->version());
  CHECK(a.value()->version().size() == 64);
  auto with_test = RulePack::FromFiles({{"pack.json", kManifest},
                                        {"rules.lua", a.value()->lua_files()[0]->contents},
                                        {"tests/t.json", R"({"cases": []})"}});
  REQUIRE(with_test);
  CHECK(with_test.value()->version() != a.value()->version());
  CHECK(with_test.value()->tests().count("tests/t.json") == 1);
}

TEST_CASE("classification: writes win over read-only globs, ? matches one character", "[policy]") {
  auto p = RulePack::FromFiles(
      {{"pack.json",
        R"({"name": "t", "tools": {"read_only": ["get_*", "ping?"], "writes": ["get_and_delete"]}})"}});
  REQUIRE(p);
  CHECK(p.value()->Classify("get_order") == ToolClass::kReadOnly);
  CHECK(p.value()->Classify("get_and_delete") == ToolClass::kWrites);
  CHECK(p.value()->Classify("ping1") == ToolClass::kReadOnly);
  CHECK(p.value()->Classify("ping12") == ToolClass::kUnknown);
  CHECK_FALSE(p.value()->allow_unknown_tools());
  CHECK(GlobMatch("a*b*c", "aXXbYYc"));
  CHECK_FALSE(GlobMatch("a*b*c", "aXXbYY"));
}

TEST_CASE("broken packs fail to load with the file and reason", "[policy]") {
  auto syntax = Pack("rule { id = 'r', tools = 'write_x', check = function() return allow( end }");
  REQUIRE_FALSE(syntax);
  CHECK(syntax.error().code() == StatusCode::kInvalidArgument);
  CHECK(syntax.error().message().find("rules.lua") != std::string::npos);

  auto dup = Pack(
      "rule { id = 'r', tools = 'write_x', check = function() return allow() end }\n"
      "rule { id = 'r', tools = 'write_y', check = function() return allow() end }");
  REQUIRE_FALSE(dup);
  CHECK(dup.error().message().find("duplicate rule id 'r'") != std::string::npos);

  auto typo = Pack("rule { id = 'r', tool = 'write_x', check = function() return allow() end }");
  REQUIRE_FALSE(typo);
  CHECK(typo.error().message().find("unknown field 'tool'") != std::string::npos);

  auto no_check = Pack("rule { id = 'r', tools = 'write_x' }");
  REQUIRE_FALSE(no_check);

  auto no_manifest = RulePack::FromFiles({{"rules.lua", ""}});
  REQUIRE_FALSE(no_manifest);
  CHECK(no_manifest.error().code() == StatusCode::kNotFound);

  auto bad_manifest =
      RulePack::FromFiles({{"pack.json", R"({"name": "t", "unknown_tools": "maybe"})"}});
  REQUIRE_FALSE(bad_manifest);

  // A 0.1 pack that used "constants" for its own settings is told what to change.
  auto own_constants =
      RulePack::FromFiles({{"pack.json", R"({"name": "t", "constants": {"max_retries": 3}})"}});
  REQUIRE_FALSE(own_constants);
  CHECK(own_constants.error().code() == StatusCode::kInvalidArgument);
  CHECK(own_constants.error().message().find("'max_retries' must be a non-empty string") !=
        std::string::npos);
  CHECK(own_constants.error().message().find("must rename it") != std::string::npos);

  auto loop = Pack("while true do end");
  REQUIRE_FALSE(loop);
  CHECK(loop.error().code() == StatusCode::kLimitExceeded);

  CHECK(RulePack::Load("/nonexistent/pack").error().code() == StatusCode::kNotFound);
}

TEST_CASE("SetPack reloads a changed pack and keeps the old one when the new fails", "[policy]") {
  auto v1 = Pack("rule { id = 'r', tools = 'write_x', check = function() return allow() end }");
  auto v2 = Pack(
      "rule { id = 'r', tools = 'write_x', check = function() return deny('v2 says no') end }");
  REQUIRE(v1);
  REQUIRE(v2);
  auto checker = MakeChecker(v1.value());
  CHECK(checker->Check(CallOf("write_x"), LedgerState{}, {}, kNow).outcome == Outcome::kAllow);
  REQUIRE(checker->SetPack(v2.value()).ok());
  PolicyDecision d = checker->Check(CallOf("write_x"), LedgerState{}, {}, kNow);
  CHECK(d.outcome == Outcome::kDeny);
  CHECK(d.pack_version == v2.value()->version());

  // A pack that loads under the default limits but not under this checker's.
  CheckerLimits tight;
  tight.instruction_budget = 1000;
  auto small = MakeChecker(v1.value(), tight);
  auto heavy = Pack(
      "local n = 0 for i = 1, 200000 do n = n + i end\n"
      "rule { id = 'r', tools = 'write_x', check = function() return deny('heavy') end }");
  REQUIRE(heavy);
  CHECK_FALSE(small->SetPack(heavy.value()).ok());
  CHECK(small->pack()->version() == v1.value()->version());
  CHECK(small->Check(CallOf("write_x"), LedgerState{}, {}, kNow).outcome == Outcome::kAllow);
}

TEST_CASE("checkers on several threads share one pack and decide independently", "[policy]") {
  auto pack = MakePack(R"lua(
    rule { id = 'grounded', tools = {'write_*'}, check = function(call, ledger)
      if not ledger.observed(call.args.id) then
        return deny('id ' .. tostring(call.args.id) .. ' was never shown by a tool')
      end
      return allow()
    end }
  )lua");
  LedgerState s = StateOf({{"facts", {{"k", "id_1"}}}});
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto checker = PolicyChecker::Create(pack);
      if (!checker) {
        wrong += 1000;
        return;
      }
      for (int i = 0; i < 500; ++i) {
        bool good = (i + t) % 2 == 0;
        ProposedCall call{"c", "write_x", {{"id", good ? "id_1" : "id_2"}}};
        PolicyDecision d = checker.value()->Check(call, s, {"conv", 1}, kNow);
        if (d.allowed() != good) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(wrong == 0);
}
