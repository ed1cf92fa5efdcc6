// call.designated(value, spec): the rule API's intent binding (see
// internal/provenance_view.h and docs/rule-api.md, "Binding a value to what
// the user asked"). Reads the spec table, checks its fields, and answers with
// provenance::Designate over the bound index; the lookup is kept as evidence.
#include <string>
#include <string_view>
#include <vector>

#include "internal/provenance_view.h"
#include "taskledger/pack/lua/lua_json.h"
#include "taskledger/provenance/designation.h"

namespace taskledger::policy_internal {
namespace {

// A string field of the spec table at index 2, or `fallback` when absent.
std::string SpecString(lua_State* L, const char* field, const char* fallback) {
  lua_getfield(L, 2, field);
  std::string out = fallback;
  if (lua_type(L, -1) == LUA_TSTRING) {
    out = lua_tostring(L, -1);
  } else if (!lua_isnil(L, -1)) {
    lua::RaiseError(L, std::string("call.designated: spec.") + field + " must be a string");
  }
  lua_pop(L, 1);
  return out;
}

// A list of strings of the spec table at index 2 (absent: empty).
std::vector<std::string> SpecList(lua_State* L, const char* field) {
  std::vector<std::string> out;
  lua_getfield(L, 2, field);
  if (lua_istable(L, -1)) {
    const lua_Integer n = luaL_len(L, -1);
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_rawgeti(L, -1, i);
      if (lua_type(L, -1) != LUA_TSTRING) {
        lua::RaiseError(L, std::string("call.designated: spec.") + field + "[" + std::to_string(i) +
                               "] is not a string");
      }
      out.emplace_back(lua_tostring(L, -1));
      lua_pop(L, 1);
    }
  } else if (!lua_isnil(L, -1)) {
    lua::RaiseError(L, std::string("call.designated: spec.") + field + " must be a list");
  }
  lua_pop(L, 1);
  return out;
}

// call.designated(value, spec) -> designated, where (see designation.h).
}  // namespace

int DesignatedFn(lua_State* L) {
  const int t = lua_type(L, 1);
  if (t != LUA_TSTRING && t != LUA_TNUMBER) luaL_argerror(L, 1, "a string or number");
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, 2) != 0) {
    const char* key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    const std::string_view k = key;
    if (k != "tools" && k != "text" && k != "author" && k != "place" && k != "request") {
      lua::RaiseError(L, "call.designated: unknown spec field '" + std::string(k) +
                             "' (tools, text, author, place, request)");
    }
    lua_pop(L, 1);
  }
  provenance::DesignationSpec spec;
  spec.tools = SpecList(L, "tools");
  spec.text_field = SpecString(L, "text", "body");
  spec.author_field = SpecString(L, "author", "sender");
  spec.place_field = SpecString(L, "place", "recipient");
  spec.request = SpecList(L, "request");
  const nlohmann::json json = lua::ToJson(L, 1);
  const std::string value = json.is_string() ? json.get<std::string>() : json.dump();
  ProvenanceView& view = *static_cast<ProvenanceView*>(lua_touserdata(L, lua_upvalueindex(1)));
  if (view.index() == nullptr || view.call() == nullptr) {
    lua::RaiseError(L,
                    "call.designated: provenance is only known while a session checks a call "
                    "(no user messages or tool outputs were recorded here)");
  }
  auto r = provenance::Designate(*view.index(), spec, value);
  if (!r) lua::RaiseError(L, "call.designated: " + r.error().message());
  view.Record({"", value, 0});
  lua_pushboolean(L, r->designated ? 1 : 0);
  if (!r->designated) return 1;
  const std::string where = r->record + " (by " + r->by + ")";
  lua_pushlstring(L, where.data(), where.size());
  return 2;
}

}  // namespace taskledger::policy_internal
