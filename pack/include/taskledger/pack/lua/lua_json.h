// Conversions between nlohmann::json and Lua values, and the read-only proxy
// through which rules see call arguments, tool outputs and the libraries.
//
// A read-only proxy is an empty table whose own metatable indexes a hidden
// data table and refuses writes (__newindex raises, __metatable locks and
// hides the metatable), so type() says "table" and reads, #, pairs, ipairs
// and the table library's readers work through __index/__len/__pairs. The
// proxy itself never holds a field: rawset is not in the sandbox, so raw
// access sees an empty table (rawget gives nil, rawlen 0, next nil) and can
// neither read nor change the data.
//
// Proxies are deep, lazily: a table the data holds (one without a sealed
// metatable, see MarkSealed) is handed out, by a read or by pairs, as its
// own read-only proxy, made on first read and cached per table (weakly), so
// reading the same table again allocates nothing. A proxy whose data holds
// no such table when it is wrapped (or re-pointed) reads straight from the
// data inside the Lua VM, without a C call; tables its owner adds to the
// data later are not guarded (the owner can change the data anyway).
// All functions raise Lua errors (call them inside Sandbox::Protected).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lua.hpp"

namespace taskledger::lua {

// Pushes `v` as read-only proxies (objects and arrays) or plain scalars. JSON
// null becomes nil.
void PushReadOnly(lua_State* L, const nlohmann::json& v, int depth = 0);
// Pushes `v` as fresh plain tables: a copy the rule may change freely.
void PushCopy(lua_State* L, const nlohmann::json& v, int depth = 0);
// Replaces the table at `idx` with a read-only proxy over it.
void WrapReadOnly(lua_State* L, int idx);
// Points the read-only proxy at `proxy` at the data table at `data` instead
// of its current data, allocating nothing once the proxy has been pointed at
// data holding tables before (a proxy reused from check to check).
void RepointReadOnly(lua_State* L, int proxy, int data);
// Marks the metatable at `meta` as sealed: the tables it governs refuse
// writes themselves (std.money values, records), so proxies hand them out as
// they are. Only for metatables no rule can reach or copy.
void MarkSealed(lua_State* L, int meta);
// True for a table a rule could change: not a proxy, not sealed.
bool IsWritableTable(lua_State* L, int idx);
bool IsReadOnlyProxy(lua_State* L, int idx);
// Converts the Lua value at `idx` (plain tables or proxies) to JSON. Raises on
// functions, userdata, cycles / depth over the sandbox's max_json_depth, NaN or infinity,
// invalid UTF-8 and tables mixing array and string keys. An empty table is [].
nlohmann::json ToJson(lua_State* L, int idx, int depth = 0);
// True if the `n` bytes at `s` are valid UTF-8 (what ToJson asks of a string).
bool ValidUtf8(const char* s, size_t n);

// Typed keys for "is this scalar observed": equal scalars (2 and 2.0 alike)
// map to equal keys; strings never equal numbers. nullopt for non-scalars.
std::optional<std::string> JsonScalarKey(const nlohmann::json& v);
std::optional<std::string> LuaScalarKey(lua_State* L, int idx);

// Raises a Lua error "<where>: <message>" located at the Lua code that called
// the running C function.
[[noreturn]] void RaiseError(lua_State* L, const std::string& message);

}  // namespace taskledger::lua
