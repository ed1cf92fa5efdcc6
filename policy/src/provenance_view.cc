// The provenance functions of `call` (see internal/provenance_view.h). Each
// is a C closure over the ProvenanceView; lookups go to the bound index (one
// hash probe per value, tokenising natively), never through the Lua pattern
// budget, and each lookup is remembered as evidence for the decision record.
#include "internal/provenance_view.h"

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

#include "taskledger/pack/lua/lua_json.h"
#include "taskledger/provenance/tokens.h"

namespace taskledger::policy_internal {
namespace {

using provenance::Source;
using provenance::SourceKind;

constexpr size_t kEvidenceLookups = 20;
constexpr size_t kEvidenceSources = 10;
constexpr size_t kEvidenceValueBytes = 200;
constexpr size_t kExplainSources = 3;
// Source tables kept across the index's generations (each a few hundred
// bytes of Lua memory with its record).
constexpr size_t kMaxSourceTables = 4096;

ProvenanceView& ViewOf(lua_State* L) {
  return *static_cast<ProvenanceView*>(lua_touserdata(L, lua_upvalueindex(1)));
}

const provenance::ProvenanceIndex& IndexOf(lua_State* L, const char* fn) {
  const ProvenanceView& v = ViewOf(L);
  if (v.index() == nullptr || v.call() == nullptr) {
    lua::RaiseError(L, std::string(fn) +
                           ": provenance is only known while a session checks a call "
                           "(no user messages or tool outputs were recorded here)");
  }
  return *v.index();
}

// call.args[name] for the function's first argument.
const nlohmann::json& ArgOf(lua_State* L, const char* fn, std::string& name) {
  size_t n = 0;
  const char* s = luaL_checklstring(L, 1, &n);
  name.assign(s, n);
  const nlohmann::json& args = ViewOf(L).call()->arguments;
  auto it = args.is_object() ? args.find(name) : args.end();
  if (!args.is_object() || it == args.end()) {
    lua::RaiseError(L, std::string(fn) + ": the call has no argument '" + name + "'");
  }
  if (!it->is_string() && !it->is_number() && !it->is_boolean()) {
    lua::RaiseError(L, std::string(fn) + ": argument '" + name +
                           "' is not a string, number or boolean; ask call.sources_of(v) "
                           "for each of its values");
  }
  return *it;
}

std::string TextOf(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::vector<const Source*> Lookup(lua_State* L, const char* fn, const nlohmann::json& value) {
  auto r = IndexOf(L, fn).SourcesOfJson(value);
  if (!r) lua::RaiseError(L, std::string(fn) + ": " + r.error().message());
  return std::move(r).value();
}

void SetString(lua_State* L, const char* field, std::string_view s) {
  lua_pushlstring(L, s.data(), s.size());
  lua_setfield(L, -2, field);
}

void PushSource(lua_State* L, const Source& s) {
  lua_createtable(L, 0, 8);
  SetString(L, "kind", provenance::SourceKindName(s.kind));
  lua_pushinteger(L, s.turn);
  lua_setfield(L, -2, "turn");
  lua_pushboolean(L, s.trusted ? 1 : 0);
  lua_setfield(L, -2, "trusted");
  lua_pushboolean(L, s.token ? 1 : 0);
  lua_setfield(L, -2, "token");
  if (s.kind == SourceKind::kTool) {
    SetString(L, "tool", s.tool);
    SetString(L, "call_id", s.call_id);
    SetString(L, "path", provenance::PointerToPath(s.pointer));
  } else if (s.kind == SourceKind::kConstant) {
    SetString(L, "name", s.tool);
  }
  if (s.record) {
    lua_createtable(L, 0, 2);
    SetString(L, "path", provenance::PointerToPath(s.record->pointer));
    lua::PushReadOnly(L, s.record->fields());
    lua_setfield(L, -2, "fields");
    lua_setfield(L, -2, "record");
  }
}

// A read-only list of read-only source tables (they are cached and shared:
// each source's table is made once per bound index, see PushSourceTables).
void PushSources(lua_State* L, ProvenanceView& view, const provenance::ProvenanceIndex& index,
                 const std::vector<const Source*>& sources) {
  view.PushSourceTables(L, index.instance());
  const int tables = lua_gettop(L);
  lua_createtable(L, static_cast<int>(sources.size()), 0);
  for (size_t i = 0; i < sources.size(); ++i) {
    const auto id = static_cast<lua_Integer>(index.SourceId(*sources[i]) + 1);
    if (lua_rawgeti(L, tables, id) == LUA_TNIL) {
      lua_pop(L, 1);
      PushSource(L, *sources[i]);
      lua::WrapReadOnly(L, -1);
      lua_pushvalue(L, -1);
      lua_rawseti(L, tables, id);
      view.NoteSourceTable();
    }
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  lua::WrapReadOnly(L, -1);
  lua_remove(L, tables);
}

// Pushes cache[key] and returns true, or pushes nothing and returns false.
// Leaves the cache table below: `cache` is its absolute index.
bool CacheGet(lua_State* L, int cache, const std::string& key) {
  lua_pushlstring(L, key.data(), key.size());
  if (lua_rawget(L, cache) != LUA_TNIL) return true;
  lua_pop(L, 1);
  return false;
}

// cache[key] = the value at the top (left on the stack).
void CachePut(lua_State* L, int cache, const std::string& key) {
  lua_pushlstring(L, key.data(), key.size());
  lua_pushvalue(L, -2);
  lua_rawset(L, cache);
}

std::string ValueKey(char prefix, const nlohmann::json& value) {
  std::string key(1, prefix);
  key += value.is_string() ? "s" : "j";
  key += value.is_string() ? value.get_ref<const std::string&>() : value.dump();
  return key;
}

// Sources of `value` as a cached read-only list, pushed.
void PushCachedSources(lua_State* L, const char* fn, const nlohmann::json& value) {
  ProvenanceView& view = ViewOf(L);
  const provenance::ProvenanceIndex& index = IndexOf(L, fn);
  view.PushCache(L);
  const int cache = lua_gettop(L);
  const std::string key = ValueKey('s', value);
  if (!CacheGet(L, cache, key)) {
    PushSources(L, view, index, Lookup(L, fn, value));
    CachePut(L, cache, key);
  }
  lua_remove(L, cache);
}

bool AnyTrusted(const std::vector<const Source*>& sources) {
  return std::any_of(sources.begin(), sources.end(), [](const Source* s) { return s->trusted; });
}

int Sources(lua_State* L) {
  std::string name;
  const nlohmann::json& value = ArgOf(L, "call.sources", name);
  PushCachedSources(L, "call.sources", value);
  ViewOf(L).Record({name, TextOf(value), 0});
  return 1;
}

int SourcesOf(lua_State* L) {
  const int t = lua_type(L, 1);
  if (t != LUA_TSTRING && t != LUA_TNUMBER && t != LUA_TBOOLEAN) {
    luaL_argerror(L, 1, "a string, number or boolean");
  }
  const nlohmann::json value = lua::ToJson(L, 1);
  PushCachedSources(L, "call.sources_of", value);
  ViewOf(L).Record({"", TextOf(value), 0});
  return 1;
}

int Trusted(lua_State* L) {
  std::string name;
  const nlohmann::json& value = ArgOf(L, "call.trusted", name);
  lua_pushboolean(L, AnyTrusted(Lookup(L, "call.trusted", value)) ? 1 : 0);
  ViewOf(L).Record({name, TextOf(value), 0});
  return 1;
}

int UntrustedTokens(lua_State* L) {
  std::string name;
  const nlohmann::json& value = ArgOf(L, "call.untrusted_tokens", name);
  provenance::TokenKinds kinds = 0;
  for (int i = 2; i <= lua_gettop(L); ++i) {
    const char* k = luaL_checkstring(L, i);
    auto kind = provenance::ParseTokenKind(k);
    if (!kind) {
      lua::RaiseError(L, std::string("call.untrusted_tokens: unknown token kind '") + k +
                             "' (url, email, account, number, money)");
    }
    kinds |= provenance::KindBit(*kind);
  }
  if (kinds == 0) kinds = provenance::kAllTokenKinds;
  const provenance::ProvenanceIndex& index = IndexOf(L, "call.untrusted_tokens");
  std::string dumped;
  const std::string_view text = value.is_string()
                                    ? std::string_view(value.get_ref<const std::string&>())
                                    : std::string_view(dumped = value.dump());
  ProvenanceView& view = ViewOf(L);
  view.PushCache(L);
  const int cache = lua_gettop(L);
  std::string& key = view.SlotKey();
  key.assign(1, static_cast<char>(kinds));
  key.append(text);
  auto& slots = view.token_slots();
  if (auto it = slots.find(key); it != slots.end()) {
    lua_rawgeti(L, cache, it->second);
  } else {
    lua_createtable(L, 0, 0);
    lua_Integer n = 0;
    std::unordered_set<std::string> seen;
    for (provenance::Token& t : provenance::Tokenize(text, kinds)) {
      if (!seen.insert(t.text).second) continue;  // each distinct token once
      auto r = index.SourcesOf(t.text);
      if (!r) lua::RaiseError(L, "call.untrusted_tokens: " + r.error().message());
      if (AnyTrusted(r.value())) continue;
      lua_createtable(L, 0, 3);
      SetString(L, "text", t.text);
      SetString(L, "kind", provenance::TokenKindName(t.kind));
      PushSources(L, view, index, r.value());
      lua_setfield(L, -2, "sources");
      lua::WrapReadOnly(L, -1);
      lua_rawseti(L, -2, ++n);
    }
    lua::WrapReadOnly(L, -1);
    const auto slot = static_cast<lua_Integer>(slots.size() + 1);
    lua_pushvalue(L, -1);
    lua_rawseti(L, cache, slot);
    slots.emplace(key, slot);
  }
  lua_remove(L, cache);
  view.Record({name, std::string(text), kinds});
  return 1;
}

std::string Explain(const std::string& name, const std::string& value,
                    const std::vector<const Source*>& sources) {
  std::string out = name.empty() ? "\"" + value + "\"" : name + " \"" + value + "\"";
  if (sources.empty()) {
    return out + " was seen nowhere (not in the user's messages, a tool output or the pack)";
  }
  out += AnyTrusted(sources) ? " appears in " : " appears only in ";
  for (size_t i = 0; i < sources.size() && i < kExplainSources; ++i) {
    if (i > 0) out += "; ";
    out += sources[i]->Describe();
  }
  if (sources.size() > kExplainSources) {
    out += " (and " + std::to_string(sources.size() - kExplainSources) + " more)";
  }
  return out;
}

int ExplainFn(lua_State* L) {
  std::string name;
  const nlohmann::json& value = ArgOf(L, "call.explain", name);
  const std::string text = Explain(name, TextOf(value), Lookup(L, "call.explain", value));
  lua_pushlstring(L, text.data(), text.size());
  ViewOf(L).Record({name, TextOf(value), 0});
  return 1;
}

int UserMessages(lua_State* L) {
  const auto& messages = IndexOf(L, "call.user_messages").user_messages();
  lua_createtable(L, static_cast<int>(messages.size()), 0);
  for (size_t i = 0; i < messages.size(); ++i) {
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, messages[i].turn);
    lua_setfield(L, -2, "turn");
    SetString(L, "text", messages[i].text);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

}  // namespace

void ProvenanceView::Install(lua_State* L, int call_data) {
  call_data = lua_absindex(L, call_data);
  lua_createtable(L, 0, 0);
  cache_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_createtable(L, 0, 0);
  source_tables_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  const std::pair<const char*, lua_CFunction> fns[] = {{"sources", Sources},
                                                       {"sources_of", SourcesOf},
                                                       {"trusted", Trusted},
                                                       {"explain", ExplainFn},
                                                       {"untrusted_tokens", UntrustedTokens},
                                                       {"user_messages", UserMessages},
                                                       {"designated", DesignatedFn}};
  for (const auto& [field, fn] : fns) {
    lua_pushlightuserdata(L, this);
    lua_pushcclosure(L, fn, 1);
    lua_setfield(L, call_data, field);
  }
}

void ProvenanceView::Bind(const provenance::ProvenanceIndex* index, const ProposedCall* call) {
  index_ = index;
  call_ = call;
  lookups_.clear();
  if (index != nullptr && index->generation() != cache_generation_) cache_stale_ = true;
}

void ProvenanceView::PushCache(lua_State* L) {
  if (cache_stale_) {
    lua_createtable(L, 0, 0);
    lua_rawseti(L, LUA_REGISTRYINDEX, cache_ref_);
    token_slots_.clear();
    cache_generation_ = index_ != nullptr ? index_->generation() : 0;
    cache_stale_ = false;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, cache_ref_);
}

void ProvenanceView::PushSourceTables(lua_State* L, std::uint64_t instance) {
  if (instance != source_tables_instance_ || source_tables_count_ >= kMaxSourceTables) {
    lua_createtable(L, 0, 0);
    lua_rawseti(L, LUA_REGISTRYINDEX, source_tables_ref_);
    source_tables_instance_ = instance;
    source_tables_count_ = 0;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, source_tables_ref_);
}

void ProvenanceView::Unbind() {
  index_ = nullptr;
  call_ = nullptr;
}

void ProvenanceView::Record(Lookup lookup) {
  if (lookups_.size() < kEvidenceLookups) lookups_.push_back(std::move(lookup));
}

nlohmann::json ProvenanceView::TakeEvidence() {
  nlohmann::json out = nlohmann::json::array();
  auto add = [&](const std::string& arg, const std::string& value,
                 const std::vector<const Source*>& sources) {
    nlohmann::json list = nlohmann::json::array();
    for (size_t i = 0; i < sources.size() && i < kEvidenceSources; ++i) {
      list.push_back(sources[i]->ToJson());
    }
    nlohmann::json e = {{"value", provenance::CleanUtf8Prefix(value, kEvidenceValueBytes)},
                        {"sources", std::move(list)}};
    if (!arg.empty()) e["arg"] = provenance::CleanUtf8Prefix(arg, kEvidenceValueBytes);
    if (sources.size() > kEvidenceSources) e["more_sources"] = sources.size() - kEvidenceSources;
    out.push_back(std::move(e));
  };
  for (const Lookup& l : lookups_) {
    if (index_ == nullptr || out.size() >= kEvidenceLookups) break;
    if (l.kinds == 0) {
      auto r = index_->SourcesOf(l.value);
      if (r) add(l.arg, l.value, r.value());
      continue;
    }
    std::unordered_set<std::string> seen;
    for (const provenance::Token& t : provenance::Tokenize(l.value, l.kinds)) {
      if (out.size() >= kEvidenceLookups) break;
      if (!seen.insert(t.text).second) continue;
      auto r = index_->SourcesOf(t.text);
      if (r && !AnyTrusted(r.value())) add(l.arg, t.text, r.value());
    }
  }
  lookups_.clear();
  return out;
}

}  // namespace taskledger::policy_internal
