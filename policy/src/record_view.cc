// The record API of the `ledger` object (docs/rule-api.md, "Records"):
// ledger.record(kind, id [, category]) reads an entity's keys as one nested
// read-only table (lazily: each field is looked up when it is read),
// ledger.each(category, pattern) iterates the entities a key pattern matches
// with their captured ids, ledger.find(category, pattern, value) answers
// reverse lookups from the view's ValueIndex, and ledger.provenance(record,
// field) gives a field's entry. Ids in keys are escaped key segments
// (taskledger/base/key_segment.h); everything handed to Lua is unescaped.
#include "internal/key_pattern.h"
#include "internal/ledger_view.h"
#include "taskledger/base/key_segment.h"
#include "taskledger/pack/lua/lua_json.h"
#include "taskledger/pack/lua/lua_std.h"

namespace taskledger::policy_internal {

using namespace ::taskledger::lua;  // NOLINT(google-build-using-namespace)
namespace {

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

// The iterator pairs(record) returns: next over the snapshot table.
int NextField(lua_State* L) {
  lua_settop(L, 2);
  if (lua_next(L, 1) != 0) return 2;
  lua_pushnil(L);
  return 1;
}

int RecordNewIndex(lua_State* L) {
  RaiseError(L, "records are read-only: the ledger changes only through tool outputs");
}

int RecordLen(lua_State* L) {
  lua_pushinteger(L, 0);
  return 1;
}

}  // namespace

void LedgerView::InstallRecordApi(lua_State* L) {
  lua_createtable(L, 0, 0);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  record_paths_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_createtable(L, 0, 5);
  lua_pushlightuserdata(L, this);
  lua_pushcclosure(L, RecordIndex, 1);
  lua_setfield(L, -2, "__index");
  lua_pushlightuserdata(L, this);
  lua_pushcclosure(L, RecordPairs, 1);
  lua_setfield(L, -2, "__pairs");
  lua_pushcfunction(L, RecordNewIndex);
  lua_setfield(L, -2, "__newindex");
  lua_pushcfunction(L, RecordLen);
  lua_setfield(L, -2, "__len");
  lua_pushliteral(L, "read-only");
  lua_setfield(L, -2, "__metatable");
  lua::MarkSealed(L, -1);
  record_meta_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pushlightuserdata(L, this);
  lua_pushcclosure(L, Now, 1);
  SetStdClock(L);
}

int LedgerView::Now(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(Self(L).now_ms_));
  return 1;
}

bool LedgerView::HasLiveUnder(Category c, std::string_view prefix) const {
  const EntryMap& m = state_->of(c);
  for (auto it = m.lower_bound(prefix); it != m.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) return false;
    if (it->second.LiveAt(state_->version, now_ms_)) return true;
  }
  return false;
}

void LedgerView::PushRecord(lua_State* L, Category c, const std::string& prefix) {
  luaL_checkstack(L, 4, "record");
  lua_createtable(L, 0, 0);
  lua_rawgeti(L, LUA_REGISTRYINDEX, record_meta_ref_);
  lua_setmetatable(L, -2);
  lua_rawgeti(L, LUA_REGISTRYINDEX, record_paths_ref_);
  lua_pushvalue(L, -2);
  std::string tag(1, static_cast<char>('0' + static_cast<int>(c)));
  tag += prefix;
  lua_pushlstring(L, tag.data(), tag.size());
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

bool LedgerView::RecordTag(lua_State* L, int idx, Category& c, std::string& prefix) {
  idx = lua_absindex(L, idx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, record_paths_ref_);
  lua_pushvalue(L, idx);
  if (lua_rawget(L, -2) != LUA_TSTRING) {
    lua_pop(L, 2);
    return false;
  }
  size_t n = 0;
  const char* tag = lua_tolstring(L, -1, &n);
  c = static_cast<Category>(tag[0] - '0');
  prefix.assign(tag + 1, n - 1);
  lua_pop(L, 2);
  return true;
}

int LedgerView::Record(lua_State* L) {
  LedgerView& v = Self(L);
  std::string_view kind = CheckKey(L, 1, "ledger.record");
  if (lua_type(L, 2) != LUA_TSTRING && lua_type(L, 2) != LUA_TNUMBER) {
    RaiseError(
        L, std::string("ledger.record: id must be a string or number, got ") + luaL_typename(L, 2));
  }
  size_t n = 0;
  const char* id = lua_tolstring(L, 2, &n);  // a number is converted in place
  Category c = lua_isnoneornil(L, 3) ? Category::kFact : CheckCategory(L, 3, "ledger.record");
  std::string prefix(kind);
  prefix += '.';
  AppendKeySegment(std::string_view(id, n), prefix);
  prefix += '.';
  if (!v.HasLiveUnder(c, prefix)) {
    prefix.pop_back();
    return v.PushWholeRecord(L, c, prefix);
  }
  prefix.pop_back();
  v.PushRecord(L, c, prefix);
  return 1;
}

// record[field]: the field's value if its key is live (a value wins over
// keys below it), else a record table of the keys below it, else nil.
int LedgerView::RecordIndex(lua_State* L) {
  LedgerView& v = Self(L);
  Category c{};
  std::string key;
  if (!v.RecordTag(L, 1, c, key)) RaiseError(L, "not a record");
  if (lua_type(L, 2) != LUA_TSTRING && lua_type(L, 2) != LUA_TNUMBER) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushvalue(L, 2);  // a number key is read as its text: order.item[11] is order.item["11"]
  size_t n = 0;
  const char* field = lua_tolstring(L, -1, &n);
  key += '.';
  AppendKeySegment(std::string_view(field, n), key);
  if (const Entry* e = v.Find(c, key)) {
    PushReadOnly(L, e->value);
    return 1;
  }
  key += '.';
  if (!v.HasLiveUnder(c, key)) {
    lua_pushnil(L);
    return 1;
  }
  key.pop_back();
  v.PushRecord(L, c, key);
  return 1;
}

// pairs(record): a snapshot of its fields (values and record tables).
int LedgerView::RecordPairs(lua_State* L) {
  LedgerView& v = Self(L);
  Category c{};
  std::string prefix;
  if (!v.RecordTag(L, 1, c, prefix)) RaiseError(L, "not a record");
  prefix += '.';
  lua_pushcfunction(L, NextField);
  lua_createtable(L, 0, 8);
  const int fields = lua_gettop(L);
  const EntryMap& m = v.state_->of(c);
  std::string name;
  std::string below;
  auto it = m.lower_bound(prefix);
  while (it != m.end() && it->first.compare(0, prefix.size(), prefix) == 0) {
    const std::string& key = it->first;
    const size_t dot = key.find('.', prefix.size());
    const std::string_view seg = std::string_view(key).substr(
        prefix.size(), dot == std::string::npos ? dot : dot - prefix.size());
    name.clear();
    AppendUnescapedKeySegment(seg, name);
    lua_pushlstring(L, name.data(), name.size());
    if (dot == std::string::npos) {  // the field's own key: sorts before the keys below it
      if (it->second.LiveAt(v.state_->version, v.now_ms_)) {
        v.NoteRead(c, key);
        PushReadOnly(L, it->second.value);
        lua_rawset(L, fields);
      } else {
        lua_pop(L, 1);
      }
      ++it;
      continue;
    }
    below.assign(key, 0, dot + 1);
    lua_pushvalue(L, -1);
    if (lua_rawget(L, fields) == LUA_TNIL && v.HasLiveUnder(c, below)) {
      lua_pop(L, 1);
      below.pop_back();
      v.PushRecord(L, c, below);
      lua_rawset(L, fields);
    } else {
      lua_pop(L, 2);
    }
    below.back() = '/';  // past every key below this field
    it = m.lower_bound(below);
  }
  lua_pushnil(L);
  return 3;
}

int LedgerView::Provenance(lua_State* L) {
  LedgerView& v = Self(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  std::string_view field = CheckKey(L, 2, "ledger.provenance");
  Category c{};
  std::string key;
  if (!v.RecordTag(L, 1, c, key)) {
    RaiseError(L, "ledger.provenance: the first argument must be a table ledger.record returned");
  }
  const size_t record_key = key.size();
  key += '.';
  AppendKeySegment(field, key);
  const Entry* e = v.Find(c, key);
  if (e == nullptr) e = v.WholeRecordHolding(c, key.substr(0, record_key), field);
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
  p.ForEachMatch(v.state_->of(c), [&](const std::string& key, const Entry& e,
                                      const std::vector<std::string_view>& raw) {
    if (!e.LiveAt(v.state_->version, v.now_ms_)) return;
    v.NoteRead(c, key);
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
