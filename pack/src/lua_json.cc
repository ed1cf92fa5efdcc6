// JSON <-> Lua conversion and read-only proxies (see internal/lua_json.h).
// Runs inside protected Lua calls only; not thread-safe (per lua_State).
#include "taskledger/pack/lua/lua_json.h"
#include "taskledger/pack/lua/sandbox.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace taskledger::lua {
namespace {

// The key under which a metatable says "the tables I govern cannot be
// changed" (read-only proxies, std.money values, records). A light userdata
// key: Lua code can neither make one nor read the (locked) metatables.
const char kSealedKey = 0;
// The registry key of the weak table of proxies (data table -> its proxy).
const char kProxyCacheKey = 0;

int RoNewIndex(lua_State* L) {
  // Strings and numbers name the field; other keys are not converted (a
  // table key's __tostring would run rule code inside the error path).
  int t = lua_type(L, 2);
  const char* key = t == LUA_TSTRING || t == LUA_TNUMBER ? lua_tostring(L, 2) : "?";
  RaiseError(L, std::string("cannot set field '") + key +
                    "': the ledger view, call arguments and libraries are read-only");
}

// True if the value at `idx` is a table a rule could change: one whose
// metatable (if any) is not sealed.
bool Writable(lua_State* L, int idx) {
  if (lua_type(L, idx) != LUA_TTABLE) return false;
  if (!lua_getmetatable(L, idx)) return true;
  const bool sealed = lua_rawgetp(L, -1, &kSealedKey) != LUA_TNIL;
  lua_pop(L, 2);
  return !sealed;
}

bool HasMetatable(lua_State* L, int idx) {
  if (!lua_getmetatable(L, idx)) return false;
  lua_pop(L, 1);
  return true;
}

// True if the table at `idx` holds a writable table among its values.
bool HoldsWritable(lua_State* L, int idx) {
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (Writable(L, -1)) {
      lua_pop(L, 2);
      return true;
    }
    lua_pop(L, 1);
  }
  return false;
}

// Pushes the data table behind the proxy at `idx`: its metatable's __index,
// or, for a proxy whose data holds tables, the first upvalue of its __index
// function (RoIndex).
void PushProxyData(lua_State* L, int idx) {
  lua_getmetatable(L, idx);
  lua_pushliteral(L, "__index");
  lua_rawget(L, -2);
  lua_remove(L, -2);
  if (lua_type(L, -1) == LUA_TFUNCTION) {
    lua_getupvalue(L, -1, 1);
    lua_remove(L, -2);
  }
}

void WrapTop(lua_State* L, bool holds_tables = true);

// Replaces a writable table at the top with its read-only proxy, made on
// first use and kept in the weak cache at `cache` (so the same table read
// again, in this check or a later one, gets the same proxy).
void GuardTop(lua_State* L, int cache) {
  if (!Writable(L, -1)) return;
  lua_pushvalue(L, -1);
  if (lua_rawget(L, cache) == LUA_TTABLE) {
    lua_remove(L, -2);
    return;
  }
  lua_pop(L, 1);
  lua_pushvalue(L, -1);
  WrapTop(L);
  lua_pushvalue(L, -2);
  lua_pushvalue(L, -2);
  lua_rawset(L, cache);
  lua_remove(L, -2);
}

// __index of a proxy whose data holds tables: upvalue 1 is the data, 2 the
// proxy cache.
int RoIndex(lua_State* L) {
  lua_settop(L, 2);
  lua_gettable(L, lua_upvalueindex(1));  // the data's own __index, if any, is guarded too
  GuardTop(L, lua_upvalueindex(2));
  return 1;
}

int RoLen(lua_State* L) {
  PushProxyData(L, 1);
  lua_pushinteger(L, static_cast<lua_Integer>(lua_rawlen(L, -1)));
  return 1;
}

// Upvalue 1: the data; 2: the proxy cache.
int RoNext(lua_State* L) {
  lua_settop(L, 2);
  if (!lua_next(L, lua_upvalueindex(1))) {
    lua_pushnil(L);
    return 1;
  }
  GuardTop(L, lua_upvalueindex(2));
  return 2;
}

// Pushes the registry's weak table of proxies (data table -> its proxy).
void PushProxyCache(lua_State* L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kProxyCacheKey) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_createtable(L, 0, 0);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &kProxyCacheKey);
}

int RoPairs(lua_State* L) {
  PushProxyData(L, 1);
  PushProxyCache(L);
  lua_pushcclosure(L, RoNext, 2);
  lua_pushnil(L);
  lua_pushnil(L);
  return 3;
}

// Points the proxy metatable at `meta` to the data table at `data`: its
// __index is the data itself when the data holds no writable table (reads
// stay inside the Lua VM), else RoIndex, which guards each table it hands
// out (also when the data has a metatable of its own: its __index could hand
// out tables the scan cannot see). The RoIndex closure is kept in the
// metatable at [1] and reused.
// `may_hold` false: the caller knows the data holds no writable table.
void PointAt(lua_State* L, int meta, int data, bool may_hold = true) {
  luaL_checkstack(L, 8, "read-only proxy");
  lua_pushliteral(L, "__index");
  if (!may_hold || (!HasMetatable(L, data) && !HoldsWritable(L, data))) {
    lua_pushvalue(L, data);
  } else if (lua_rawgeti(L, meta, 1) == LUA_TFUNCTION) {
    lua_pushvalue(L, data);
    lua_setupvalue(L, -2, 1);
  } else {
    lua_pop(L, 1);
    lua_pushvalue(L, data);
    PushProxyCache(L);
    lua_pushcclosure(L, RoIndex, 2);
    lua_pushvalue(L, -1);
    lua_rawseti(L, meta, 1);
  }
  lua_rawset(L, meta);
}

// Wraps the table at the top into a proxy, leaving the proxy at the top. The
// proxy is an empty table and stays empty: nothing can rawset into it (rawset
// is removed and the metatable is locked), so every write reaches __newindex
// and every read falls through to __index (the data table, or RoIndex).
// `holds_tables` false: the caller knows the data holds no writable table.
void WrapTop(lua_State* L, bool holds_tables) {
  luaL_checkstack(L, 4, "read-only proxy");
  const int data = lua_gettop(L);
  lua_createtable(L, 0, 0);
  lua_createtable(L, 0, 6);
  PointAt(L, data + 2, data, holds_tables);
  lua_pushcfunction(L, RoNewIndex);
  lua_setfield(L, -2, "__newindex");
  lua_pushcfunction(L, RoLen);
  lua_setfield(L, -2, "__len");
  lua_pushcfunction(L, RoPairs);
  lua_setfield(L, -2, "__pairs");
  lua_pushliteral(L, "read-only");
  lua_setfield(L, -2, "__metatable");
  lua_pushboolean(L, 1);
  lua_rawsetp(L, -2, &kSealedKey);
  lua_setmetatable(L, -2);
  lua_remove(L, -2);
}

template <bool kReadOnly>
void Push(lua_State* L, const nlohmann::json& v, int depth) {
  switch (v.type()) {
    case nlohmann::json::value_t::boolean:
      lua_pushboolean(L, v.get<bool>());
      return;
    case nlohmann::json::value_t::number_integer:
      lua_pushinteger(L, v.get<int64_t>());
      return;
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = v.get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        lua_pushinteger(L, static_cast<lua_Integer>(u));
      } else {
        lua_pushnumber(L, static_cast<lua_Number>(u));
      }
      return;
    }
    case nlohmann::json::value_t::number_float:
      lua_pushnumber(L, v.get<double>());
      return;
    case nlohmann::json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      lua_pushlstring(L, s.data(), s.size());
      return;
    }
    case nlohmann::json::value_t::object:
    case nlohmann::json::value_t::array:
      break;
    default:
      lua_pushnil(L);
      return;
  }
  if (const int max_depth = SandboxOf(L).limits().max_json_depth; depth >= max_depth) {
    luaL_error(L, "JSON value nested deeper than %d levels", max_depth);
  }
  luaL_checkstack(L, 6, "JSON value");
  if (v.is_array()) {
    lua_createtable(L, static_cast<int>(std::min<size_t>(v.size(), 1 << 20)), 0);
    lua_Integer i = 0;
    for (const auto& x : v) {
      Push<kReadOnly>(L, x, depth + 1);
      lua_rawseti(L, -2, ++i);
    }
  } else {
    lua_createtable(L, 0, static_cast<int>(std::min<size_t>(v.size(), 1 << 20)));
    for (const auto& [k, x] : v.items()) {
      lua_pushlstring(L, k.data(), k.size());
      Push<kReadOnly>(L, x, depth + 1);
      lua_rawset(L, -3);
    }
  }
  if constexpr (kReadOnly) WrapTop(L, false);  // its tables are proxies already
}

std::string NumberText(double d) {
  if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9.0e15) {
    return std::to_string(static_cast<int64_t>(d));
  }
  return nlohmann::json(d).dump();
}

}  // namespace

bool ValidUtf8(const char* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xe  ? 3
                 : (c >> 3) == 0x1e ? 4
                                    : 0;
    if (len == 0 || i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

void RaiseError(lua_State* L, const std::string& message) {
  luaL_where(L, 1);
  if (lua_rawlen(L, -1) == 0) {
    lua_pop(L, 1);
    luaL_where(L, 2);
  }
  lua_pushlstring(L, message.data(), message.size());
  lua_concat(L, 2);
  lua_error(L);
  __builtin_unreachable();
}

void PushReadOnly(lua_State* L, const nlohmann::json& v, int depth) { Push<true>(L, v, depth); }
void PushCopy(lua_State* L, const nlohmann::json& v, int depth) { Push<false>(L, v, depth); }

void WrapReadOnly(lua_State* L, int idx) {
  idx = lua_absindex(L, idx);
  lua_pushvalue(L, idx);
  WrapTop(L);
  lua_replace(L, idx);
}

void RepointReadOnly(lua_State* L, int proxy, int data) {
  proxy = lua_absindex(L, proxy);
  data = lua_absindex(L, data);
  lua_getmetatable(L, proxy);
  PointAt(L, lua_gettop(L), data);
  lua_pop(L, 1);
}

void MarkSealed(lua_State* L, int meta) {
  meta = lua_absindex(L, meta);
  lua_pushboolean(L, 1);
  lua_rawsetp(L, meta, &kSealedKey);
}

bool IsWritableTable(lua_State* L, int idx) { return Writable(L, lua_absindex(L, idx)); }

bool IsReadOnlyProxy(lua_State* L, int idx) {
  // lua_getmetatable ignores __metatable, and RoNewIndex is unreachable from
  // Lua, so a rule cannot forge a table that passes this test.
  if (lua_type(L, idx) != LUA_TTABLE || !lua_getmetatable(L, idx)) return false;
  lua_pushliteral(L, "__newindex");
  lua_rawget(L, -2);
  bool ours = lua_tocfunction(L, -1) == RoNewIndex;
  lua_pop(L, 2);
  return ours;
}

nlohmann::json ToJson(lua_State* L, int idx, int depth) {
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
    case LUA_TNIL:
      return nullptr;
    case LUA_TBOOLEAN:
      return static_cast<bool>(lua_toboolean(L, idx));
    case LUA_TNUMBER: {
      if (lua_isinteger(L, idx)) return static_cast<int64_t>(lua_tointeger(L, idx));
      double d = lua_tonumber(L, idx);
      if (!std::isfinite(d)) luaL_error(L, "cannot convert NaN or infinity to JSON");
      return d;
    }
    case LUA_TSTRING: {
      size_t n = 0;
      const char* s = lua_tolstring(L, idx, &n);
      if (!ValidUtf8(s, n)) luaL_error(L, "string is not valid UTF-8");
      return std::string(s, n);
    }
    case LUA_TTABLE:
      if (IsReadOnlyProxy(L, idx)) {
        // Convert the data behind the proxy (the proxy itself is empty).
        PushProxyData(L, idx);
        nlohmann::json out = ToJson(L, -1, depth);
        lua_pop(L, 1);
        return out;
      }
      break;
    default:
      luaL_error(L, "cannot convert a %s to JSON", luaL_typename(L, idx));
  }
  if (const int max_depth = SandboxOf(L).limits().max_json_depth; depth >= max_depth) {
    luaL_error(L, "table nested deeper than %d levels (or a cycle)", max_depth);
  }
  luaL_checkstack(L, 4, "JSON conversion");
  size_t count = 0;
  bool string_keys = false, int_keys = false;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    ++count;
    if (lua_type(L, -2) == LUA_TSTRING) {
      string_keys = true;
    } else if (lua_isinteger(L, -2)) {
      int_keys = true;
    } else {
      luaL_error(L, "table keys must be strings or array indices");
    }
    lua_pop(L, 1);
  }
  if (string_keys && int_keys) luaL_error(L, "table mixes array and string keys");
  if (!string_keys) {
    if (lua_rawlen(L, idx) != count) luaL_error(L, "array has holes or non-positive indices");
    nlohmann::json arr = nlohmann::json::array();
    for (size_t i = 1; i <= count; ++i) {
      lua_rawgeti(L, idx, static_cast<lua_Integer>(i));
      arr.push_back(ToJson(L, -1, depth + 1));
      lua_pop(L, 1);
    }
    return arr;
  }
  nlohmann::json obj = nlohmann::json::object();
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    size_t n = 0;
    const char* k = lua_tolstring(L, -2, &n);
    if (!ValidUtf8(k, n)) luaL_error(L, "table key is not valid UTF-8");
    obj[std::string(k, n)] = ToJson(L, -1, depth + 1);
    lua_pop(L, 1);
  }
  return obj;
}

std::optional<std::string> JsonScalarKey(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::string:
      return "s" + v.get_ref<const std::string&>();
    case nlohmann::json::value_t::boolean:
      return v.get<bool>() ? "b1" : "b0";
    case nlohmann::json::value_t::number_integer:
      return "n" + std::to_string(v.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return "n" + std::to_string(v.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return "n" + NumberText(v.get<double>());
    default:
      return std::nullopt;
  }
}

std::optional<std::string> LuaScalarKey(lua_State* L, int idx) {
  switch (lua_type(L, idx)) {
    case LUA_TSTRING: {
      size_t n = 0;
      const char* s = lua_tolstring(L, idx, &n);
      std::string out;
      out.reserve(n + 1);
      out.push_back('s');
      out.append(s, n);
      return out;
    }
    case LUA_TBOOLEAN:
      return lua_toboolean(L, idx) ? "b1" : "b0";
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) return "n" + std::to_string(lua_tointeger(L, idx));
      return "n" + NumberText(lua_tonumber(L, idx));
    default:
      return std::nullopt;
  }
}

}  // namespace taskledger::lua
