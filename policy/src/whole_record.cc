// Records stored whole (extract.json "store": "whole", the default for an
// object or array): ledger.record(kind, id) on an entity whose own key
// `kind.<id>` holds one structured entry returns that value, read-only, and
// ledger.provenance(record, field) answers with that one entry for any field
// it holds. An entity with keys below `kind.<id>.` is read field by field
// (record_view.cc) and a whole value at `kind.<id>` is then not consulted.
#include "internal/ledger_view.h"
#include "taskledger/pack/lua/lua_json.h"

namespace taskledger::policy_internal {

int LedgerView::PushWholeRecord(lua_State* L, Category c, const std::string& key) {
  const Entry* e = Find(c, key);
  if (e == nullptr || !e->value.is_structured()) {
    lua_pushnil(L);
    return 1;
  }
  lua::PushReadOnly(L, e->value);
  // Tagged like a record table, so ledger.provenance finds its key.
  lua_rawgeti(L, LUA_REGISTRYINDEX, record_paths_ref_);
  lua_pushvalue(L, -2);
  std::string tag(1, static_cast<char>('0' + static_cast<int>(c)));
  tag += key;
  lua_pushlstring(L, tag.data(), tag.size());
  lua_rawset(L, -3);
  lua_pop(L, 1);
  return 1;
}

const Entry* LedgerView::WholeRecordHolding(Category c, const std::string& key,
                                            std::string_view field) {
  const Entry* e = Find(c, key);
  if (e == nullptr) return nullptr;
  const nlohmann::json& v = e->value;
  if (v.is_object()) return v.contains(field) ? e : nullptr;
  if (!v.is_array() || field.empty()) return nullptr;
  // A Lua index: provenance(order.items, 1) asks for the first element.
  size_t i = 0;
  for (char ch : field) {
    if (ch < '0' || ch > '9' || i > v.size()) return nullptr;
    i = i * 10 + static_cast<size_t>(ch - '0');
  }
  return i >= 1 && i <= v.size() ? e : nullptr;
}

}  // namespace taskledger::policy_internal
