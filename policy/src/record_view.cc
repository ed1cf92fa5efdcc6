// The record API of the `ledger` object (docs/rule-api.md, "Records"):
// ledger.record(kind, id [, category]) reads an entity's keys as one nested
// read-only table, ledger.each(category, pattern) iterates the entities a key
// pattern matches with their captured ids, ledger.find(category, pattern,
// value) answers reverse lookups from the view's ValueIndex, and
// ledger.provenance(record_table, field) gives a field's entry. Ids in keys are
// escaped key segments (taskledger/base/key_segment.h); everything handed to
// Lua is unescaped.
#include <map>
#include <memory>

#include "internal/key_pattern.h"
#include "internal/ledger_view.h"
#include "taskledger/base/key_segment.h"
#include "taskledger/pack/lua/lua_json.h"
#include "taskledger/pack/lua/lua_std.h"

namespace taskledger::policy_internal {

using namespace ::taskledger::lua;  // NOLINT(google-build-using-namespace)
namespace {

// One level of a record: a leaf entry, or named children (children win when
// a key is both: "order.X.payment" and "order.X.payment.Y").
struct RecordNode {
  const Entry* leaf = nullptr;
  std::map<std::string, std::unique_ptr<RecordNode>> kids;
};

KeyPattern CheckPattern(lua_State* L, int idx, const char* fn) {
  Result<KeyPattern> p = KeyPattern::Parse(CheckKey(L, idx, fn));
  if (!p) RaiseError(L, std::string(fn) + ": " + p.error().message());
  return std::move(p).value();
}

// Pushes the captures of one match, unescaped: a string for one capture, else
// a table of them.
void PushIds(lua_State* L, const std::vector<std::string_view>& raw) {
  std::string id;
  if (raw.size() == 1) {
    AppendUnescapedKeySegment(raw[0], id);
    lua_pushlstring(L, id.data(), id.size());
    return;
  }
  lua_createtable(L, static_cast<int>(raw.size()), 0);
  for (size_t i = 0; i < raw.size(); ++i) {
    id.clear();
    AppendUnescapedKeySegment(raw[i], id);
    lua_pushlstring(L, id.data(), id.size());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
}

// The iterator ledger.each returns: upvalue 1 is the flat row table, 2 the
// row width, 3 the next index.
int EachNext(lua_State* L) {
  const lua_Integer width = lua_tointeger(L, lua_upvalueindex(2));
  const lua_Integer at = lua_tointeger(L, lua_upvalueindex(3));
  const int rows = lua_upvalueindex(1);
  if (lua_rawgeti(L, rows, at) == LUA_TNIL) return 1;
  for (lua_Integer i = 1; i < width; ++i) lua_rawgeti(L, rows, at + i);
  lua_pushinteger(L, at + width);
  lua_replace(L, lua_upvalueindex(3));
  return static_cast<int>(width);
}

}  // namespace

void LedgerView::InstallRecordApi(lua_State* L) {
  lua_createtable(L, 0, 0);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  record_paths_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pushlightuserdata(L, this);
  lua_pushcclosure(L, Now, 1);
  SetStdClock(L);
}

int LedgerView::Now(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(Self(L).now_ms_));
  return 1;
}

int LedgerView::Record(lua_State* L) {
  LedgerView& v = Self(L);
  std::string_view kind = CheckKey(L, 1, "ledger.record");
  std::string_view id;
  std::string number;
  if (lua_type(L, 2) == LUA_TNUMBER) {
    number = lua_tostring(L, 2);  // NOLINT: a copy; the stack slot is not converted in place
    id = number;
  } else {
    id = CheckKey(L, 2, "ledger.record");
  }
  Category c = lua_isnoneornil(L, 3) ? Category::kFact : CheckCategory(L, 3, "ledger.record");
  std::string prefix(kind);
  prefix += '.';
  AppendKeySegment(id, prefix);
  prefix += '.';
  RecordNode root;
  const EntryMap& m = v.state_->of(c);
  for (auto it = m.lower_bound(prefix); it != m.end(); ++it) {
    const std::string& key = it->first;
    if (key.compare(0, prefix.size(), prefix) != 0) break;
    if (!it->second.LiveAt(v.state_->version, v.now_ms_)) continue;
    RecordNode* node = &root;
    size_t pos = prefix.size();
    while (true) {
      size_t dot = key.find('.', pos);
      std::string name = UnescapeKeySegment(
          std::string_view(key).substr(pos, dot == std::string::npos ? dot : dot - pos));
      auto& kid = node->kids[name];
      if (!kid) kid = std::make_unique<RecordNode>();
      node = kid.get();
      if (dot == std::string::npos) break;
      pos = dot + 1;
    }
    node->leaf = &it->second;
  }
  if (root.kids.empty()) {
    lua_pushnil(L);
    return 1;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, v.record_paths_ref_);
  const int paths = lua_gettop(L);
  prefix.pop_back();
  // Depth is bounded by the key's length; each level pushes at most 3 values.
  auto push = [&](auto& self, const RecordNode& n, std::string& at) -> void {
    luaL_checkstack(L, 4, "record too deep");
    lua_createtable(L, 0, static_cast<int>(n.kids.size()));
    for (const auto& [name, kid] : n.kids) {
      lua_pushlstring(L, name.data(), name.size());
      if (!kid->kids.empty()) {
        const size_t base = at.size();
        at += '.';
        AppendKeySegment(name, at);
        self(self, *kid, at);
        at.resize(base);
      } else {
        PushReadOnly(L, kid->leaf->value);
      }
      lua_rawset(L, -3);
    }
    WrapReadOnly(L, -1);
    lua_pushvalue(L, -1);
    std::string tag(1, static_cast<char>('0' + static_cast<int>(c)));
    tag += at;
    lua_pushlstring(L, tag.data(), tag.size());
    lua_rawset(L, paths);
  };
  push(push, root, prefix);
  return 1;
}

int LedgerView::Provenance(lua_State* L) {
  LedgerView& v = Self(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  std::string_view field = CheckKey(L, 2, "ledger.provenance");
  lua_rawgeti(L, LUA_REGISTRYINDEX, v.record_paths_ref_);
  lua_pushvalue(L, 1);
  if (lua_rawget(L, -2) != LUA_TSTRING) {
    RaiseError(L, "ledger.provenance: the first argument must be a table ledger.record returned");
  }
  size_t n = 0;
  const char* tag = lua_tolstring(L, -1, &n);
  auto c = static_cast<Category>(tag[0] - '0');
  std::string key(tag + 1, n - 1);
  key += '.';
  AppendKeySegment(field, key);
  const Entry* e = v.Find(c, key);
  if (e == nullptr) {
    lua_pushnil(L);
  } else {
    PushEntryTable(L, *e);
  }
  return 1;
}

int LedgerView::Each(lua_State* L) {
  LedgerView& v = Self(L);
  Category c = CheckCategory(L, 1, "ledger.each");
  KeyPattern p = CheckPattern(L, 2, "ledger.each");
  const auto width = static_cast<lua_Integer>(p.captures() + 1);
  lua_createtable(L, 0, 0);
  const int rows = lua_gettop(L);
  lua_Integer n = 0;
  std::string id;
  p.ForEachMatch(v.state_->of(c),
                 [&](const std::string&, const Entry& e, const std::vector<std::string_view>& raw) {
                   if (!e.LiveAt(v.state_->version, v.now_ms_)) return;
                   for (std::string_view r : raw) {
                     id.clear();
                     AppendUnescapedKeySegment(r, id);
                     lua_pushlstring(L, id.data(), id.size());
                     lua_rawseti(L, rows, ++n);
                   }
                   PushCopy(L, e.value);
                   if (lua_isnil(L, -1)) {  // a JSON null value: keep the row, as false
                     lua_pop(L, 1);
                     lua_pushboolean(L, 0);
                   }
                   lua_rawseti(L, rows, ++n);
                 });
  lua_pushinteger(L, width);
  lua_pushinteger(L, 1);
  lua_pushcclosure(L, EachNext, 3);
  return 1;
}

int LedgerView::Find(lua_State* L) {
  LedgerView& v = Self(L);
  Category c = CheckCategory(L, 1, "ledger.find");
  KeyPattern p = CheckPattern(L, 2, "ledger.find");
  std::optional<std::string> value_key = LuaScalarKey(L, 3);
  if (!value_key) RaiseError(L, "ledger.find: the value must be a string, number or boolean");
  v.find_index_.Follow(*v.state_);
  lua_createtable(L, 0, 0);
  const std::set<std::string>* keys = v.find_index_.Lookup(c, *value_key);
  if (keys == nullptr) return 1;
  std::vector<std::string_view> raw;
  lua_Integer n = 0;
  for (const std::string& key : *keys) {
    if (!p.Match(key, raw)) continue;
    if (v.Find(c, key) == nullptr) continue;  // not live at this check
    PushIds(L, raw);
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}

}  // namespace taskledger::policy_internal
