// The rule API's `ledger.memo(fn)` (see internal/check_memo.h).
#include "internal/check_memo.h"

#include "taskledger/pack/lua/lua_json.h"

namespace taskledger::policy_internal {

using ::taskledger::lua::IsWritableTable;
using ::taskledger::lua::RaiseError;
using ::taskledger::lua::RepointReadOnly;
using ::taskledger::lua::WrapReadOnly;

namespace {

// Stands for "fn returned nil" (nil cannot be a table value) and for "fn is
// running" (a memo that asks for itself would recurse until the budget ends).
const char kNil = 1;
const char kRunning = 2;

// True if the function at `idx` is running: it has a frame on the Lua stack.
// Only asked when its running mark is found, so the walk is rare.
bool Running(lua_State* L, int idx) {
  lua_Debug ar;
  for (int level = 0; lua_getstack(L, level, &ar) != 0; ++level) {
    lua_getinfo(L, "f", &ar);
    const bool same = lua_rawequal(L, -1, idx) != 0;
    lua_pop(L, 1);
    if (same) return true;
  }
  return false;
}

}  // namespace

void CheckMemo::Install(lua_State* L, int ledger_ref) {
  ledger_ref_ = ledger_ref;
  lua_createtable(L, 0, 8);
  table_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_createtable(L, 0, 8);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  proxies_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pushlightuserdata(L, this);
  lua_pushnil(L);  // the function kept last (the fast path)
  lua_pushnil(L);  // its value
  lua_pushcclosure(L, Memo, 3);
  lua_setfield(L, -2, "memo");
}

void CheckMemo::Wrap(lua_State* L, int fn, int value) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, proxies_ref_);
  const int proxies = lua_gettop(L);
  lua_pushvalue(L, fn);
  if (lua_rawget(L, proxies) == LUA_TTABLE) {
    // The proxy of fn's value in an earlier check: point it at this value.
    RepointReadOnly(L, -1, value);
  } else {
    lua_pop(L, 1);
    WrapReadOnly(L, value);
    lua_pushvalue(L, value);
  }
  lua_replace(L, value);
  lua_pushvalue(L, fn);
  lua_pushvalue(L, value);
  lua_rawset(L, proxies);
  lua_pop(L, 1);
}

void CheckMemo::PushTable(lua_State* L) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, table_ref_);
  if (table_check_ == check_) return;
  // Empty it in place: the table keeps its slots for the next check.
  const int t = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_pushnil(L);
    lua_rawset(L, t);
  }
  table_check_ = check_;
  entries_ = 0;
}

int CheckMemo::Memo(lua_State* L) {
  auto* self = static_cast<CheckMemo*>(lua_touserdata(L, lua_upvalueindex(1)));
  if (lua_type(L, 1) != LUA_TFUNCTION) {
    RaiseError(L, std::string("ledger.memo: expects a function, got ") + luaL_typename(L, 1));
  }
  // Fast path: the function kept last in this check (in a pack whose rules
  // share one memo, every rule but the first asks for it): two upvalue reads.
  if (self->last_check_ == self->check_ && lua_rawequal(L, 1, lua_upvalueindex(2))) {
    lua_pushvalue(L, lua_upvalueindex(3));
    return 1;
  }
  lua_settop(L, 1);
  self->PushTable(L);  // 2
  lua_pushvalue(L, 1);
  if (lua_rawget(L, 2) != LUA_TNIL) {
    void* mark = lua_touserdata(L, -1);
    if (mark == &kRunning && Running(L, 1)) {
      RaiseError(L, "ledger.memo: the function asks for its own value");
    }
    if (mark != &kRunning) {
      if (mark == &kNil) lua_pushnil(L);
      return 1;
    }
    --self->entries_;  // left by an error a rule caught: run fn again
  }
  lua_pop(L, 1);
  const bool keep = self->entries_ < kMaxEntries;
  if (keep) {
    lua_pushvalue(L, 1);
    lua_pushlightuserdata(L, const_cast<char*>(&kRunning));
    lua_rawset(L, 2);
    ++self->entries_;
  }
  lua_pushvalue(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, self->ledger_ref_);
  lua_rawgeti(L, LUA_REGISTRYINDEX, self->call_ref_);
  // lua_call, not lua_pcall: an error (or the budget's kill, or running out
  // of memory) must reach the sandbox as it was raised. The running mark it
  // leaves is told from recursion by Running() (see the lookup above).
  lua_call(L, 2, 1);
  if (IsWritableTable(L, 3)) {
    self->Wrap(L, 1, 3);  // read-only at every level (lazily, see lua_json.h)
  } else if (!lua_isnil(L, 3) && lua_type(L, 3) != LUA_TSTRING && lua_type(L, 3) != LUA_TNUMBER &&
             lua_type(L, 3) != LUA_TBOOLEAN && lua_type(L, 3) != LUA_TTABLE) {
    RaiseError(L, std::string("ledger.memo: the function returned a ") + luaL_typename(L, 3) +
                      "; return a scalar, nil or a table");
  }
  if (keep) {
    lua_pushvalue(L, 1);
    if (lua_isnil(L, 3)) {
      lua_pushlightuserdata(L, const_cast<char*>(&kNil));
    } else {
      lua_pushvalue(L, 3);
    }
    lua_rawset(L, 2);
    lua_pushvalue(L, 1);
    lua_replace(L, lua_upvalueindex(2));
    lua_pushvalue(L, 3);
    lua_replace(L, lua_upvalueindex(3));
    self->last_check_ = self->check_;
  }
  return 1;
}

}  // namespace taskledger::policy_internal
