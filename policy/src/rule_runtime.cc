// Loading a pack into a checker's runtime (see internal/rule_runtime.h).
#include "internal/rule_runtime.h"

namespace taskledger::policy_internal {

Result<std::unique_ptr<RuleRuntime>> LoadRuleRuntime(const RulePack& pack,
                                                     const CheckerLimits& limits) {
  // The views must have their final address before they are installed: the
  // Lua closures they create point at them.
  auto runtime = std::make_unique<RuleRuntime>();
  RuleRuntime* raw = runtime.get();
  auto compiled = lua::CompilePack(
      pack.lua_files(), limits,
      [raw](lua_State* L) {
        raw->view.Install(L);
        raw->call_view.Install(L);
        raw->view.SetMemoCall(raw->call_view.ref());
        lua_rawgeti(L, LUA_REGISTRYINDEX, raw->call_view.call_data_ref());
        raw->provenance.Install(L, -1);
        lua_pop(L, 1);
        raw->log.Install(L);
      },
      pack.lib_files());
  if (!compiled) return compiled.error();
  runtime->compiled = std::move(compiled.value());
  return runtime;
}

}  // namespace taskledger::policy_internal
