// The `ledger` object of the rule API (see internal/ledger_view.h and
// docs/rule-api.md): lookups straight into the bound LedgerState, copies of
// values pushed to Lua, and a per-view index for ledger.observed().
#include "internal/ledger_view.h"

#include <algorithm>
#include <cstring>

#include "taskledger/ledger/entry.h"
#include "taskledger/pack/lua/lua_json.h"
#include "taskledger/pack/rule_pack.h"

namespace taskledger::policy_internal {

// The sandbox's conversions between Lua and JSON, and its read-only proxies.
using namespace ::taskledger::lua;  // NOLINT(google-build-using-namespace)
namespace {

// Lookups cached per category and view; beyond this a lookup is not cached
// (bounds the memory a rule probing many keys can pin in its view).
constexpr size_t kMaxCachedValues = 256;
// Stands for "no live entry" in a value cache (nil cannot be stored).
const char kAbsent = 0;

}  // namespace

Category CheckCategory(lua_State* L, int idx, const char* fn) {
  size_t n = 0;
  const char* s = lua_type(L, idx) == LUA_TSTRING ? lua_tolstring(L, idx, &n) : nullptr;
  // The two names rules pass on every check, told by length and bytes (most
  // lookups are of facts): ParseCategory's loop over the names cost ~80
  // instructions a call, ~3 calls a retail check (callgrind, bench_policy).
  if (n == 4 && std::memcmp(s, "fact", 4) == 0) return Category::kFact;
  if (n == 10 && std::memcmp(s, "identifier", 10) == 0) return Category::kIdentifier;
  std::optional<Category> c = s ? ParseCategory(std::string_view(s, n)) : std::nullopt;
  if (!c) {
    RaiseError(L,
               std::string(fn) +
                   ": category must be \"fact\", \"identifier\", \"constraint\" or \"condition\"");
  }
  return *c;
}

std::string_view CheckKey(lua_State* L, int idx, const char* fn) {
  if (lua_type(L, idx) != LUA_TSTRING) {
    RaiseError(L, std::string(fn) + ": key must be a string, got " + luaL_typename(L, idx));
  }
  size_t n = 0;
  const char* s = lua_tolstring(L, idx, &n);
  return {s, n};
}

namespace {

bool ActionMatches(const nlohmann::json& action, const ProposedCall& call) {
  if (action.is_null()) return true;
  if (!action.is_object()) return false;
  auto tool = action.find("tool");
  if (tool == action.end() || !tool->is_string() || *tool != call.tool) return false;
  auto args = action.find("args");
  if (args == action.end()) args = action.find("arguments");
  if (args == action.end()) return true;  // bound to the tool only
  return *args == call.arguments;
}

}  // namespace

LedgerView& LedgerView::Self(lua_State* L) {
  auto* v = static_cast<LedgerView*>(lua_touserdata(L, lua_upvalueindex(1)));
  if (v->state_ == nullptr) RaiseError(L, "the ledger can only be read during a check");
  return *v;
}

void LedgerView::Install(lua_State* L) {
  lua_createtable(L, 0, 16);
  auto add = [&](const char* name, lua_CFunction fn, int category) {
    lua_pushlightuserdata(L, this);
    if (category >= 0) {
      lua_pushinteger(L, category);
      lua_createtable(L, 0, 16);  // the value cache
      lua_pushcclosure(L, fn, 3);
    } else {
      lua_pushcclosure(L, fn, 1);
    }
    lua_setfield(L, -2, name);
  };
  add("fact", Value, static_cast<int>(Category::kFact));
  add("identifier", Value, static_cast<int>(Category::kIdentifier));
  add("constraint", Value, static_cast<int>(Category::kConstraint));
  add("condition", Value, static_cast<int>(Category::kCondition));
  add("entry", EntryOf, -1);
  add("verified", Verified, -1);
  add("known", Known, -1);
  add("single", Single, -1);
  add("fields", Fields, -1);
  add("keys", Keys, -1);
  add("observed", Observed, -1);
  add("confirmed", Confirmed, -1);
  add("calls", Calls, -1);
  add("record", Record, -1);
  add("each", Each, -1);
  add("find", Find, -1);
  add("provenance", Provenance, -1);
  add("recorded_calls", RecordedCalls, -1);
  InstallRecordApi(L);
  lua_pushinteger(L, 0);
  lua_setfield(L, -2, "version");
  lua_pushinteger(L, 1);
  lua_setfield(L, -2, "turn");
  lua_pushvalue(L, -1);
  data_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  WrapReadOnly(L, -1);
  lua_pushvalue(L, -1);
  ledger_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_rawgeti(L, LUA_REGISTRYINDEX, data_ref_);
  memo_.Install(L, ledger_ref_);
  lua_pop(L, 2);
}

void LedgerView::Bind(const LedgerState& state, const ProposedCall& call, const ViewKey& key,
                      int64_t now_ms) {
  state_ = &state;
  call_ = &call;
  now_ms_ = now_ms;
  memo_.Reset();
  bool same = !key.conversation.empty() && key == key_;
  // The observed index follows a new view by diffing (equal keys mean equal
  // states: then it is reused as is); only time forces a rebuild.
  if (now_ms < index_from_ms_ || now_ms >= index_until_ms_) index_valid_ = false;
  if (!same) index_behind_ = true;
  if (!same || now_ms < cache_from_ms_ || now_ms >= cache_until_ms_) {
    for (bool& stale : cache_stale_) stale = true;
    cache_from_ms_ = now_ms;
    cache_until_ms_ = std::numeric_limits<int64_t>::max();
  }
  if (!same) key_ = key;
  noted_size_ = 0;
  rule_begin_ = 0;
  rule_dropped_now_ = 0;
  rule_ends_.clear();
  rule_dropped_.clear();
}

void LedgerView::Unbind() {
  state_ = nullptr;
  call_ = nullptr;
}

void LedgerView::Push(lua_State* L) {
  if (state_->version != pushed_version_) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, data_ref_);
    lua_pushinteger(L, static_cast<lua_Integer>(state_->version));
    lua_setfield(L, -2, "version");
    lua_pushinteger(L, static_cast<lua_Integer>(state_->version + 1));
    lua_setfield(L, -2, "turn");
    lua_pop(L, 1);
    pushed_version_ = state_->version;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, ledger_ref_);
}

const Entry* LedgerView::Find(Category c, std::string_view key) {
  NoteRead(c, key);
  return state_->FindLive(c, key, now_ms_);
}

void LedgerView::CountObservedKey(std::string key, int delta) {
  if (delta > 0) {
    ++observed_[std::move(key)];
    return;
  }
  auto it = observed_.find(key);
  if (it != observed_.end() && --it->second == 0) observed_.erase(it);
}

void LedgerView::CountObserved(const Entry& e, uint64_t version, int delta) {
  // Wall-clock expiry bounds how long this index stays right.
  if (delta > 0 && e.expires_at_ms && *e.expires_at_ms > now_ms_) {
    index_until_ms_ = std::min(index_until_ms_, *e.expires_at_ms);
  }
  if (e.provenance.source != SourceKind::kToolOutput) return;
  if (!e.LiveAt(version, now_ms_)) return;
  if (e.value.is_array()) {
    for (const auto& x : e.value) {
      if (auto k = JsonScalarKey(x)) CountObservedKey(std::move(*k), delta);
    }
  } else if (auto k = JsonScalarKey(e.value)) {
    CountObservedKey(std::move(*k), delta);
  }
}

void LedgerView::BuildObservedIndex() {
  observed_.clear();
  index_from_ms_ = now_ms_;
  index_until_ms_ = std::numeric_limits<int64_t>::max();
  for (Category c : kAllCategories) {
    for (const auto& [key, e] : state_->of(c)) CountObserved(e, state_->version, +1);
  }
  indexed_ = *state_;
  index_valid_ = true;
  index_behind_ = false;
  ++index_builds_;
}

void LedgerView::UpdateObservedIndex() {
  // Within the window no entry's wall-clock liveness changes, so what an
  // entry contributed when it was counted is what it contributes now at the
  // version it was counted for.
  const uint64_t from = indexed_.version;
  const uint64_t to = state_->version;
  for (Category c : kAllCategories) {
    if (indexed_.of(c).Identical(state_->of(c)) && from == to) continue;
    EntryMap::ForEachDifference(indexed_.of(c), state_->of(c), std::max(from, to),
                                [&](const std::string&, const Entry* a, const Entry* b) {
                                  if (a != nullptr) CountObserved(*a, from, -1);
                                  if (b != nullptr) CountObserved(*b, to, +1);
                                });
  }
  indexed_ = *state_;
  index_behind_ = false;
  index_from_ms_ = std::max(index_from_ms_, now_ms_);
}

void LedgerView::PushValueCache(lua_State* L, Category c) {
  const int i = static_cast<int>(c);
  lua_pushvalue(L, lua_upvalueindex(3));
  if (!cache_stale_[i]) return;
  // Empty it in place: the table keeps its slots for the next view.
  int t = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_pushnil(L);
    lua_rawset(L, t);
  }
  cache_entries_[i] = 0;
  cache_stale_[i] = false;
}

int LedgerView::Value(lua_State* L) {
  LedgerView& v = Self(L);
  auto c = static_cast<Category>(lua_tointeger(L, lua_upvalueindex(2)));
  std::string_view key = CheckKey(L, 1, "ledger.fact");
  v.NoteRead(c, key);  // a cached answer is read evidence too
  lua_settop(L, 1);
  v.PushValueCache(L, c);
  lua_pushvalue(L, 1);
  if (lua_rawget(L, 2) != LUA_TNIL) {
    if (lua_touserdata(L, -1) == &kAbsent) lua_pushnil(L);
    return 1;
  }
  lua_pop(L, 1);
  const Entry* e = v.state_->FindLive(c, key, v.now_ms_);  // noted above
  if (e == nullptr) {
    lua_pushnil(L);
  } else {
    PushCopy(L, e->value);
  }
  // Tables are not cached: each lookup returns a fresh copy the rule may
  // change. Strings, numbers and booleans are immutable values in Lua.
  size_t& cached = v.cache_entries_[static_cast<int>(c)];
  if (cached < kMaxCachedValues && (e == nullptr || !e->value.is_structured())) {
    lua_pushvalue(L, 1);
    if (e == nullptr || e->value.is_null()) {
      lua_pushlightuserdata(L, const_cast<char*>(&kAbsent));
    } else {
      lua_pushvalue(L, -2);
    }
    lua_rawset(L, 2);
    ++cached;
    // A live entry with a wall-clock expiry is only right until then; an
    // absent one stays absent as time goes on (Bind empties the cache if
    // the clock goes back).
    if (e != nullptr && e->expires_at_ms) {
      v.cache_until_ms_ = std::min(v.cache_until_ms_, *e->expires_at_ms);
    }
  }
  return 1;
}

void PushEntryTable(lua_State* L, const Entry& e) {
  lua_createtable(L, 0, 8);
  PushCopy(L, e.value);
  lua_setfield(L, -2, "value");
  lua_pushinteger(L, static_cast<lua_Integer>(e.provenance.turn));
  lua_setfield(L, -2, "turn");
  std::string_view source = SourceKindName(e.provenance.source);
  lua_pushlstring(L, source.data(), source.size());
  lua_setfield(L, -2, "source");
  lua_pushlstring(L, e.provenance.source_id.data(), e.provenance.source_id.size());
  lua_setfield(L, -2, "source_id");
  lua_pushboolean(L, e.provenance.verified);
  lua_setfield(L, -2, "verified");
  lua_pushlstring(L, e.provenance.rule_id.data(), e.provenance.rule_id.size());
  lua_setfield(L, -2, "rule");
  if (e.expires_at_turn) {
    lua_pushinteger(L, static_cast<lua_Integer>(*e.expires_at_turn));
    lua_setfield(L, -2, "expires_at_turn");
  }
  if (e.expires_at_ms) {
    lua_pushinteger(L, static_cast<lua_Integer>(*e.expires_at_ms));
    lua_setfield(L, -2, "expires_at_ms");
  }
}

int LedgerView::EntryOf(lua_State* L) {
  LedgerView& v = Self(L);
  Category c = CheckCategory(L, 1, "ledger.entry");
  const Entry* e = v.Find(c, CheckKey(L, 2, "ledger.entry"));
  if (e == nullptr) {
    lua_pushnil(L);
  } else {
    PushEntryTable(L, *e);
  }
  return 1;
}

int LedgerView::Verified(lua_State* L) {
  LedgerView& v = Self(L);
  Category c = CheckCategory(L, 1, "ledger.verified");
  const Entry* e = v.Find(c, CheckKey(L, 2, "ledger.verified"));
  lua_pushboolean(L, e != nullptr && e->provenance.verified);
  return 1;
}

int LedgerView::Keys(lua_State* L) {
  LedgerView& v = Self(L);
  Category c = CheckCategory(L, 1, "ledger.keys");
  std::string_view prefix;
  if (!lua_isnoneornil(L, 2)) prefix = CheckKey(L, 2, "ledger.keys");
  const auto& m = v.state_->of(c);
  lua_createtable(L, 0, 0);
  lua_Integer n = 0;
  for (auto it = m.lower_bound(prefix); it != m.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    if (!it->second.LiveAt(v.state_->version, v.now_ms_)) continue;
    lua_pushlstring(L, it->first.data(), it->first.size());
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}

int LedgerView::Observed(lua_State* L) {
  LedgerView& v = Self(L);
  // The key is built in a reused buffer: no allocation once it has grown.
  if (lua_type(L, 1) == LUA_TSTRING) {
    size_t n = 0;
    const char* s = lua_tolstring(L, 1, &n);
    v.scratch_.assign(1, 's');
    v.scratch_.append(s, n);
  } else if (std::optional<std::string> key = LuaScalarKey(L, 1)) {
    v.scratch_ = std::move(*key);
  } else {
    lua_pushboolean(L, 0);
    return 1;
  }
  if (!v.index_valid_) {
    v.BuildObservedIndex();
  } else if (v.index_behind_) {
    v.UpdateObservedIndex();
  }
  lua_pushboolean(L, v.observed_.count(v.scratch_) > 0);
  return 1;
}

int LedgerView::Confirmed(lua_State* L) {
  LedgerView& v = Self(L);
  const Entry* e = v.Find(Category::kCondition, "confirmation");
  bool ok = false;
  if (e != nullptr && e->value.is_object()) {
    auto action = e->value.find("action");
    ok = action == e->value.end() || ActionMatches(*action, *v.call_);
  }
  lua_pushboolean(L, ok);
  return 1;
}

}  // namespace taskledger::policy_internal
