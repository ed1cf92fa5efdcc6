// The call history in the rule API (docs/rule-api.md):
// - ledger.calls(tool [, arg, value]): how many recorded calls match, counted
//   by the view's CallCounts (internal/call_counts.h), which follows the
//   growing history instead of walking it whole in every check;
// - ledger.recorded_calls(tool [, n]): the calls recorded in the ledger (tool,
//   id, arguments, outcome, turn), newest first, so a rule can read what an
//   earlier call asked for instead of smuggling it through an extraction
//   mapping. Walks the state's CallList newest first and stops after n
//   matches (it never copies the list).
#include <algorithm>

#include "internal/ledger_view.h"
#include "taskledger/pack/lua/lua_json.h"
#include "taskledger/pack/rule_pack.h"

namespace taskledger::policy_internal {

using namespace ::taskledger::lua;  // NOLINT(google-build-using-namespace)

int LedgerView::Calls(lua_State* L) {
  LedgerView& v = Self(L);
  std::string_view tool = CheckKey(L, 1, "ledger.calls");
  const bool by_arg = !lua_isnoneornil(L, 2);
  std::string_view arg;
  if (by_arg) arg = CheckKey(L, 2, "ledger.calls");
  if (by_arg && lua_type(L, 3) != LUA_TSTRING) {
    // Any other value is compared as JSON (5 equals 5.0), by a walk.
    const nlohmann::json want = ToJson(L, 3);
    lua_Integer n = 0;
    v.state_->calls.ForEachNewestFirst([&](const CallRecord& c) {
      if (!CallCounts::Matches(c, tool, false, {}, {}) || !c.call.arguments.is_object())
        return true;
      auto it = c.call.arguments.find(arg);
      if (it != c.call.arguments.end() && *it == want) ++n;
      return true;
    });
    lua_pushinteger(L, n);
    return 1;
  }
  // A string value (the common case: an id) is compared as it is; it must be
  // valid UTF-8 as ToJson requires.
  std::string_view value;
  if (by_arg) {
    size_t n = 0;
    const char* s = lua_tolstring(L, 3, &n);
    if (!ValidUtf8(s, n)) luaL_error(L, "string is not valid UTF-8");
    value = std::string_view(s, n);
  }
  lua_pushinteger(L, v.call_counts_.Count(v.state_->calls, tool, by_arg, arg, value));
  return 1;
}

int LedgerView::RecordedCalls(lua_State* L) {
  LedgerView& v = Self(L);
  std::string_view tool = CheckKey(L, 1, "ledger.recorded_calls");
  lua_Integer limit = kDefaultRecordedCalls;
  if (!lua_isnoneornil(L, 2)) {
    if (!lua_isinteger(L, 2) || lua_tointeger(L, 2) < 1) {
      RaiseError(L, "ledger.recorded_calls: n must be a positive integer");
    }
    limit = std::min<lua_Integer>(lua_tointeger(L, 2), kMaxRecordedCalls);
  }
  lua_createtable(L, 0, 0);
  const int out = lua_gettop(L);
  lua_Integer n = 0;
  v.state_->calls.ForEachNewestFirst([&](const CallRecord& c) {
    if (!GlobMatch(tool, c.call.tool)) return true;
    lua_createtable(L, 0, 6);
    lua_pushlstring(L, c.call.tool.data(), c.call.tool.size());
    lua_setfield(L, -2, "tool");
    lua_pushlstring(L, c.call.id.data(), c.call.id.size());
    lua_setfield(L, -2, "id");
    PushReadOnly(L, c.call.arguments);
    lua_setfield(L, -2, "args");
    lua_pushlstring(L, c.outcome.data(), c.outcome.size());
    lua_setfield(L, -2, "outcome");
    lua_pushinteger(L, static_cast<lua_Integer>(c.turn));
    lua_setfield(L, -2, "turn");
    lua_pushboolean(L, c.writes);
    lua_setfield(L, -2, "writes");
    lua_rawseti(L, out, ++n);
    return n < limit;
  });
  return 1;
}

}  // namespace taskledger::policy_internal
