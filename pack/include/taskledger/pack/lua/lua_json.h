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
// Replaces the table at `idx` with a read-only proxy over it (for libraries).
void WrapReadOnly(lua_State* L, int idx);
bool IsReadOnlyProxy(lua_State* L, int idx);
// Converts the Lua value at `idx` (plain tables or proxies) to JSON. Raises on
// functions, userdata, cycles / depth over the sandbox's max_json_depth, NaN or infinity,
// invalid UTF-8 and tables mixing array and string keys. An empty table is [].
nlohmann::json ToJson(lua_State* L, int idx, int depth = 0);

// Typed keys for "is this scalar observed": equal scalars (2 and 2.0 alike)
// map to equal keys; strings never equal numbers. nullopt for non-scalars.
std::optional<std::string> JsonScalarKey(const nlohmann::json& v);
std::optional<std::string> LuaScalarKey(lua_State* L, int idx);

// Raises a Lua error "<where>: <message>" located at the Lua code that called
// the running C function.
[[noreturn]] void RaiseError(lua_State* L, const std::string& message);

}  // namespace taskledger::lua
