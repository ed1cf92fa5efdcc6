// The `call` object of the rule API (see internal/call_view.h).
#include "internal/call_view.h"

#include "internal/lua_json.h"

namespace taskledger::policy_internal {

void CallView::Install(lua_State* L) {
  lua_createtable(L, 0, 3);
  lua_pushvalue(L, -1);
  call_data_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  WrapReadOnly(L, -1);
  call_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_createtable(L, 0, 0);
  WrapReadOnly(L, -1);
  lua_getmetatable(L, -1);
  args_meta_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  args_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
}

void CallView::Push(lua_State* L, const ProposedCall& call) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, call_data_ref_);
  lua_pushlstring(L, call.id.data(), call.id.size());
  lua_setfield(L, -2, "id");
  lua_pushlstring(L, call.tool.data(), call.tool.size());
  lua_setfield(L, -2, "tool");
  if (call.arguments.is_object()) {
    // Refill the data table behind the persistent args proxy in place: clear
    // the previous call's fields, then set this call's. Calls to one tool
    // share their argument names, so the table keeps its slots and a check
    // allocates nothing here but the argument values. (Setting an existing
    // field to nil during lua_next is allowed; adding one is not, hence two
    // passes.)
    lua_rawgeti(L, LUA_REGISTRYINDEX, args_meta_ref_);
    lua_pushliteral(L, "__index");
    lua_rawget(L, -2);
    int data = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, data)) {
      lua_pop(L, 1);
      lua_pushvalue(L, -1);
      lua_pushnil(L);
      lua_rawset(L, data);
    }
    for (const auto& [k, v] : call.arguments.items()) {
      lua_pushlstring(L, k.data(), k.size());
      PushReadOnly(L, v, 1);
      lua_rawset(L, data);
    }
    lua_pop(L, 2);
    lua_rawgeti(L, LUA_REGISTRYINDEX, args_ref_);
  } else if (call.arguments.is_array()) {
    PushReadOnly(L, call.arguments);
  } else {
    lua_rawgeti(L, LUA_REGISTRYINDEX, args_meta_ref_);
    lua_createtable(L, 0, 0);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, args_ref_);
  }
  lua_setfield(L, -2, "args");
  lua_pop(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, call_ref_);
}

}  // namespace taskledger::policy_internal
