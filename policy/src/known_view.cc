// ledger.known(category, key), ledger.fields(category, prefix, name...) and
// ledger.single(category, prefix) of the rule API (docs/rule-api.md): an
// entry's value and whether a tool output verified it, in one call, for rules
// that need both (ledger.fact(key) and ledger.verified("fact", key) cost a
// call each), for one key or for several fields of one entity (keys built in
// a reused buffer); and the one verified entry under a prefix with the count
// of them (the conversation's authenticated user), without the keys table and
// the calls per key of ledger.keys. They read the bound state like
// ledger.entry and allocate nothing but the values.
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

int LedgerView::Fields(lua_State* L) {
  LedgerView& v = Self(L);
  const Category c = CheckCategory(L, 1, "ledger.fields");
  const std::string_view prefix = CheckKey(L, 2, "ledger.fields");
  const int top = lua_gettop(L);
  luaL_checkstack(L, 2 * (top - 2), "ledger.fields");
  for (int i = 3; i <= top; ++i) {
    const std::string_view name = CheckKey(L, i, "ledger.fields");
    v.scratch_.assign(prefix);
    v.scratch_.push_back('.');
    v.scratch_.append(name);
    const Entry* e = v.Find(c, v.scratch_);
    if (e == nullptr) {
      lua_pushnil(L);
    } else {
      lua::PushCopy(L, e->value);
    }
    lua_pushboolean(L, e != nullptr && e->provenance.verified);
  }
  return 2 * (top - 2);
}

int LedgerView::Single(lua_State* L) {
  LedgerView& v = Self(L);
  const Category c = CheckCategory(L, 1, "ledger.single");
  const std::string_view prefix = CheckKey(L, 2, "ledger.single");
  const auto& m = v.state_->of(c);
  const Entry* one = nullptr;
  lua_Integer n = 0;
  for (auto it = m.lower_bound(prefix); it != m.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    if (!it->second.LiveAt(v.state_->version, v.now_ms_) || !it->second.provenance.verified) {
      continue;
    }
    v.NoteRead(c, it->first);
    one = ++n == 1 ? &it->second : nullptr;
  }
  if (one == nullptr) {
    lua_pushnil(L);
  } else {
    lua::PushCopy(L, one->value);
  }
  lua_pushinteger(L, n);
  return 2;
}

}  // namespace taskledger::policy_internal
