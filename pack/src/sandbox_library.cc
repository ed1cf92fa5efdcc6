// The standard library as rules see it: the base library without code
// loading, GC control, output and raw writes; setmetatable without __gc;
// xpcall whose handler cannot run unmetered after a budget kill; string,
// table, math and utf8 behind read-only proxies, with string.find/match/
// gmatch/gsub guarded by length caps and the pattern cost bound
// (pattern_guard.h). The choices follow Redis scripting (docs/rule-api.md,
// "Sandbox"). Part of the sandbox's setup; not thread-safe, like the
// lua_State it works on.
#include <cstdio>
#include <initializer_list>
#include <string_view>

#include "internal/sandbox_setup.h"
#include "taskledger/pack/lua/lua_json.h"
#include "taskledger/pack/lua/pattern_guard.h"
#include "taskledger/pack/lua/sandbox.h"

namespace taskledger::lua {
namespace {

// Base-library names removed: code loading, GC control, output, raw writes
// (which could defeat read-only proxies) and the real globals table.
constexpr const char* kRemovedBase[] = {
    "print",          "load",   "loadstring", "dofile", "loadfile",
    "collectgarbage", "rawset", "require",    "warn",   "_G"};

// setmetatable without finalizers: a __gc would run rule code at an arbitrary
// later point (another rule, another check), outside any rule's accounting.
int SafeSetMetatable(lua_State* L) {
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    bool has_gc = lua_rawget(L, 2) != LUA_TNIL;
    lua_pop(L, 1);
    if (has_gc) RaiseError(L, "setmetatable: __gc metamethods are not allowed in rules");
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

// Lua calls an error's message handler before unwinding, and when the error
// comes from a hook it does so with hooks disabled: a Lua handler reached from
// the budget kill would run unmetered. So xpcall gets this C handler, which
// hands over to the rule's handler (upvalue 1) only for ordinary errors.
int GuardedMessageHandler(lua_State* L) {
  if (SandboxOf(L).budget_tripped()) return 1;
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

// tostring(v) as the base library's, with a string returned as it is: no
// lookup of a __tostring metamethod, which strings never have here (the
// string metatable is hidden from rules and holds none). Rules call it on
// every check (ids, argument values).
int ToString(lua_State* L) {
  luaL_checkany(L, 1);
  if (lua_type(L, 1) == LUA_TSTRING) {
    lua_settop(L, 1);
    return 1;
  }
  luaL_tolstring(L, 1, nullptr);
  return 1;
}

int SafeXpcall(lua_State* L) {
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, GuardedMessageHandler, 1);
  lua_replace(L, 2);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

// string.find/match/gmatch/gsub: length caps and the backtracking bound
// before handing over to Lua's own implementation (upvalue 1, a C function,
// called directly on this frame's stack: no second call frame). Upvalue 2 is
// the function name, upvalue 3 is 1 for find (which has a "plain" flag) and 2
// for gmatch (which scans every position).
int GuardedPattern(lua_State* L) {
  const Sandbox& sb = SandboxOf(L);
  const char* name = lua_tostring(L, lua_upvalueindex(2));
  lua_Integer kind = lua_tointeger(L, lua_upvalueindex(3));
  size_t ls = 0, lp = 0;
  luaL_checklstring(L, 1, &ls);
  const char* p = luaL_checklstring(L, 2, &lp);
  const CheckerLimits& lim = sb.limits();
  if (ls > lim.pattern_max_subject) {
    luaL_error(L, "%s: subject of %d bytes is longer than the %d allowed for patterns", name,
               static_cast<int>(ls), static_cast<int>(lim.pattern_max_subject));
  }
  if (lp > lim.pattern_max_pattern) {
    luaL_error(L, "%s: pattern of %d bytes is longer than the %d allowed", name,
               static_cast<int>(lp), static_cast<int>(lim.pattern_max_pattern));
  }
  bool plain = kind == 1 && lua_toboolean(L, 4);
  if (!plain) {
    double work = EstimatePatternWork(std::string_view(p, lp), ls, kind == 2);
    if (work > lim.pattern_max_work) {
      char msg[600];
      std::snprintf(msg, sizeof msg,
                    "%s: pattern '%.200s' may backtrack too much on a %zu-byte subject (bound "
                    "%.3g steps, limit %.3g); use fewer '*', '+', '-' items, anchor it with '^', "
                    "or shorten the subject",
                    name, p, ls, work, lim.pattern_max_work);
      luaL_error(L, "%s", msg);
    }
  }
  // The string library's functions read only their arguments (no upvalues),
  // so they run on this frame as if Lua had called them.
  return lua_tocfunction(L, lua_upvalueindex(1))(L);
}

void GuardStringFunction(lua_State* L, int lib, const char* field, int kind) {
  lua_getfield(L, lib, field);
  // GuardedPattern calls it on its own stack: it must be a C function
  // without upvalues (as the string library's are).
  if (lua_tocfunction(L, -1) == nullptr || lua_getupvalue(L, -1, 1) != nullptr) {
    luaL_error(L, "string.%s is not a C function without upvalues", field);
  }
  lua_pushfstring(L, "string.%s", field);
  lua_pushinteger(L, kind);
  lua_pushcclosure(L, GuardedPattern, 3);
  lua_setfield(L, lib, field);
}

// Opens library `name` with `open`, removes `removed`, and stores a read-only
// proxy of it in the globals table at index `g`. Returns with the real library
// table on the stack top.
void OpenLibrary(lua_State* L, int g, const char* name, lua_CFunction open,
                 std::initializer_list<const char*> removed) {
  luaL_requiref(L, name, open, 0);
  for (const char* r : removed) {
    lua_pushnil(L);
    lua_setfield(L, -2, r);
  }
  lua_pushvalue(L, -1);
  WrapReadOnly(L, -1);
  lua_setfield(L, g, name);
}

}  // namespace

void InstallLibraries(lua_State* L, int g) {
  luaL_requiref(L, "_G", luaopen_base, 0);
  lua_pop(L, 1);
  for (const char* name : kRemovedBase) {
    lua_pushnil(L);
    lua_setfield(L, g, name);
  }
  lua_getfield(L, g, "setmetatable");
  lua_pushcclosure(L, SafeSetMetatable, 1);
  lua_setfield(L, g, "setmetatable");
  lua_getfield(L, g, "xpcall");
  lua_pushcclosure(L, SafeXpcall, 1);
  lua_setfield(L, g, "xpcall");
  lua_pushcfunction(L, ToString);
  lua_setfield(L, g, "tostring");

  OpenLibrary(L, g, "string", luaopen_string, {"dump"});
  int lib = lua_gettop(L);
  GuardStringFunction(L, lib, "find", 1);
  GuardStringFunction(L, lib, "match", 0);
  GuardStringFunction(L, lib, "gmatch", 2);
  GuardStringFunction(L, lib, "gsub", 0);
  // Strings share one metatable whose __index is the real string table; hide it.
  lua_pushliteral(L, "");
  lua_getmetatable(L, -1);
  lua_pushliteral(L, "read-only");
  lua_setfield(L, -2, "__metatable");
  lua_settop(L, g);
  OpenLibrary(L, g, "table", luaopen_table, {});
  OpenLibrary(L, g, "math", luaopen_math, {"randomseed"});
  OpenLibrary(L, g, "utf8", luaopen_utf8, {});
  lua_settop(L, g);
}

}  // namespace taskledger::lua
