// CallView's kept names (policy/src/internal/call_view.h): the tool and
// argument names a pack declares (DeclaredNames) stay kept as Lua strings
// whatever names calls bring first, and junk names fill only the slots
// beyond them. A speed property (a kept name is not hashed and interned
// again per check) seen through CallView::Keeps; uses internal headers.
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "internal/call_view.h"
#include "internal/rule_runtime.h"
#include "policy_test_util.h"
#include "taskledger/pack/lua/sandbox.h"

namespace taskledger {
namespace {

TEST_CASE("a pack's tool and argument names are declared; globs are not", "[policy]") {
  auto pack = RulePack::FromFiles(
      {{"pack.json",
        R"({"name": "p", "tools": {"writes": ["cancel_order", "modify_*"], "read_only": ["get_order"]}})"},
       {"extract.json",
        R"({"tools": {"get_order": [{"id": "o", "path": "/status", "category": "fact", "key": "order.{@order_id}.status"}]}})"},
       {"rules.lua",
        "rule { id = 'r', tools = {'cancel_order', 'ship_?'}, why = function(call)\n"
        "  if call.args.reason == nil then return 'no reason' end end }\n"}});
  REQUIRE(pack.has_value());
  const std::vector<std::string> names = policy_internal::DeclaredNames(*pack.value());
  auto has = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  CHECK(has("cancel_order"));
  CHECK(has("get_order"));
  CHECK(has("order_id"));  // extract.json {@order_id}
  CHECK(has("reason"));    // call.args.reason
  CHECK_FALSE(has("modify_*"));
  CHECK_FALSE(has("ship_?"));
}

TEST_CASE("junk names sent first do not push out the declared names", "[policy]") {
  auto sandbox = lua::Sandbox::Create(CheckerLimits{});
  REQUIRE(sandbox.has_value());
  policy_internal::CallView view;
  const std::vector<std::string> declared = {"cancel_order", "order_id", "reason",
                                             std::string(41, 'x'), "order_id"};
  Status st = sandbox.value()->Protected([&](lua_State* L) {
    view.Install(L, declared);
    // 100 calls, each with a tool and an argument name of its own.
    for (int i = 0; i < 100; ++i) {
      const std::string n = std::to_string(i);
      view.Push(L, ProposedCall{"c" + n, "junk_tool_" + n, {{"junk_arg_" + n, i}}});
      lua_settop(L, 0);
    }
    view.Push(L, ProposedCall{"c", "cancel_order", {{"order_id", "#1"}, {"reason", "x"}}});
    lua_settop(L, 0);
  });
  REQUIRE(st.ok());
  CHECK(view.Keeps("cancel_order"));
  CHECK(view.Keeps("order_id"));
  CHECK(view.Keeps("reason"));
  CHECK_FALSE(view.Keeps(std::string(41, 'x')));  // longer than Lua interns
  // The first 64 other names are kept (32 calls bring a tool and an
  // argument name each), later ones are not.
  CHECK(view.Keeps("junk_tool_0"));
  CHECK(view.Keeps("junk_arg_31"));
  CHECK_FALSE(view.Keeps("junk_tool_32"));
  CHECK_FALSE(view.Keeps("junk_arg_99"));
}

}  // namespace
}  // namespace taskledger
