// ledger.recorded_calls(tool [, n]) of the rule API (docs/rule-api.md): the
// calls recorded in the ledger (tool, id, arguments, outcome, turn), newest
// first, so a rule can read what an earlier call asked for instead of
// smuggling it through an extraction mapping. Walks the state's CallList
// newest first and stops after n matches (it never copies the list).
#include <algorithm>

#include "internal/ledger_view.h"
#include "taskledger/pack/lua/lua_json.h"
#include "taskledger/pack/rule_pack.h"

namespace taskledger::policy_internal {

using namespace ::taskledger::lua;  // NOLINT(google-build-using-namespace)

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
    if (!GlobMatch(tool, c.tool)) return true;
    lua_createtable(L, 0, 6);
    lua_pushlstring(L, c.tool.data(), c.tool.size());
    lua_setfield(L, -2, "tool");
    lua_pushlstring(L, c.call_id.data(), c.call_id.size());
    lua_setfield(L, -2, "id");
    PushReadOnly(L, c.arguments);
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
