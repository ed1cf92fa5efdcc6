// ledger.known(category, key) of the rule API (docs/rule-api.md): an entry's
// value and whether a tool output verified it, in one call, for rules that
// need both (ledger.fact(key) and ledger.verified("fact", key) cost a call
// each). Reads the bound state like ledger.entry, without building an entry
// table.
#include "internal/ledger_view.h"
#include "taskledger/pack/lua/lua_json.h"

namespace taskledger::policy_internal {

int LedgerView::Known(lua_State* L) {
  LedgerView& v = Self(L);
  const Category c = CheckCategory(L, 1, "ledger.known");
  const Entry* e = v.Find(c, CheckKey(L, 2, "ledger.known"));
  if (e == nullptr) {
    lua_pushnil(L);
  } else {
    lua::PushCopy(L, e->value);
  }
  lua_pushboolean(L, e != nullptr && e->provenance.verified);
  return 2;
}

}  // namespace taskledger::policy_internal
