// The `call` object of the rule API (see internal/call_view.h).
#include "internal/call_view.h"

#include <algorithm>
#include <bit>
#include <cstdint>

#include "taskledger/pack/lua/lua_json.h"
#include "taskledger/pack/lua/sandbox.h"

namespace taskledger::policy_internal {

// The sandbox's conversions between Lua and JSON, and its read-only proxies.
using namespace ::taskledger::lua;  // NOLINT(google-build-using-namespace)
namespace {

// True if `a` and `b` push as the same Lua values: equal types all the way
// down (json's own == says 1 == 1.0, but Lua tells an integer from a float)
// and floats equal bit for bit (-0.0 and 0.0 print differently). Deeper than
// `max_depth` counts as different, so the push reports the depth error.
bool PushesSame(const nlohmann::json& a, const nlohmann::json& b, int max_depth, int depth = 0) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case nlohmann::json::value_t::object: {
      if (depth >= max_depth || a.size() != b.size()) return false;
      const auto& oa = a.get_ref<const nlohmann::json::object_t&>();
      const auto& ob = b.get_ref<const nlohmann::json::object_t&>();
      for (auto i = oa.begin(), j = ob.begin(); i != oa.end(); ++i, ++j) {
        if (i->first != j->first || !PushesSame(i->second, j->second, max_depth, depth + 1))
          return false;
      }
      return true;
    }
    case nlohmann::json::value_t::array: {
      if (depth >= max_depth || a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i) {
        if (!PushesSame(a[i], b[i], max_depth, depth + 1)) return false;
      }
      return true;
    }
    case nlohmann::json::value_t::number_float:
      return std::bit_cast<uint64_t>(a.get<double>()) == std::bit_cast<uint64_t>(b.get<double>());
    default:
      return a == b;
  }
}

bool IsScalar(const nlohmann::json& v) { return !v.is_object() && !v.is_array(); }

// The bits that tell a scalar from every other scalar of its JSON type
// (floats bit for bit, as PushesSame compares them); 0 for strings and null.
uint64_t ScalarBits(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::boolean:
      return v.get<bool>() ? 1 : 0;
    case nlohmann::json::value_t::number_integer:
      return static_cast<uint64_t>(v.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return v.get<uint64_t>();
    case nlohmann::json::value_t::number_float:
      return std::bit_cast<uint64_t>(v.get<double>());
    default:
      return 0;
  }
}

// True if the argument `v` pushes as the kept flat argument `a` holds.
bool SameScalar(const nlohmann::json& v, const std::string& text, nlohmann::json::value_t type,
                uint64_t bits) {
  if (v.type() != type) return false;
  if (v.is_string()) return v.get_ref<const std::string&>() == text;
  return IsScalar(v) && ScalarBits(v) == bits;
}

}  // namespace

void CallView::PushName(lua_State* L, std::string_view s) {
  for (const KeptName& n : names_) {
    if (n.text.size() == s.size() && n.text == s) {
      lua_rawgeti(L, LUA_REGISTRYINDEX, n.ref);
      return;
    }
  }
  lua_pushlstring(L, s.data(), s.size());
  // Only short names: Lua interns (hashes) just those, and the few kept
  // strings stay small whatever names a call brings.
  if (names_.size() - declared_ < kNamesKept && s.size() <= kNameMaxBytes) {
    lua_pushvalue(L, -1);
    names_.push_back(KeptName{std::string(s), luaL_ref(L, LUA_REGISTRYINDEX)});
  }
}

bool CallView::SameArguments(const ArgsTable& t, const nlohmann::json& arguments, int max_depth) {
  if (!t.flat_valid) return PushesSame(arguments, t.arguments, max_depth);
  if (max_depth < 1 || !arguments.is_object() || arguments.size() != t.flat.size()) return false;
  auto kept = t.flat.begin();
  for (const auto& [k, v] : arguments.get_ref<const nlohmann::json::object_t&>()) {
    const FlatArgument& a = *kept++;
    if (k != a.key || !SameScalar(v, a.text, a.type, a.bits)) return false;
  }
  return true;
}

void CallView::KeepArguments(ArgsTable& t, const nlohmann::json& arguments) {
  const bool flat =
      arguments.is_object() && std::all_of(arguments.begin(), arguments.end(),
                                           [](const nlohmann::json& v) { return IsScalar(v); });
  t.flat_valid = false;
  if (!flat) {
    t.arguments = arguments;
    return;
  }
  if (!t.arguments.is_null()) t.arguments = nullptr;
  t.flat.resize(arguments.size());
  auto kept = t.flat.begin();
  for (const auto& [k, v] : arguments.get_ref<const nlohmann::json::object_t&>()) {
    FlatArgument& a = *kept++;
    a.key.assign(k);
    a.type = v.type();
    a.bits = ScalarBits(v);
    if (v.is_string()) {
      a.text.assign(v.get_ref<const std::string&>());
    } else {
      a.text.clear();
    }
  }
  t.flat_valid = true;
}

bool CallView::Keeps(std::string_view s) const {
  return std::any_of(names_.begin(), names_.end(), [&](const KeptName& n) { return n.text == s; });
}

void CallView::Install(lua_State* L, const std::vector<std::string>& declared) {
  for (const std::string& name : declared) {
    if (declared_ == kDeclaredKept) break;
    if (name.size() > kNameMaxBytes || Keeps(name)) continue;
    lua_pushlstring(L, name.data(), name.size());
    names_.push_back(KeptName{name, luaL_ref(L, LUA_REGISTRYINDEX)});
    ++declared_;
  }
  lua_createtable(L, 0, 3);
  lua_pushvalue(L, -1);
  call_data_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  WrapReadOnly(L, -1);
  call_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  for (ArgsTable& t : tables_) {
    lua_createtable(L, 0, 4);
    t.ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  lua_createtable(L, 0, 0);
  WrapReadOnly(L, -1);
  lua_getmetatable(L, -1);
  args_meta_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  args_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
}

size_t CallView::TableFor(const std::string& tool) {
  for (size_t i = 0; i < tables_.size(); ++i) {
    if (tables_[i].filled && tables_[i].tool == tool) return i;
  }
  const size_t i = next_reuse_;
  next_reuse_ = (next_reuse_ + 1) % tables_.size();
  tables_[i].filled = false;
  tables_[i].tool = tool;
  return i;
}

void CallView::Push(lua_State* L, const ProposedCall& call) {
  const bool same_id = pushed_ && call.id == id_;
  const bool same_tool = pushed_ && call.tool == tool_;
  const bool object = call.arguments.is_object();
  size_t table = 0;
  bool same_args = false;
  if (pushed_ && object) {
    table = TableFor(call.tool);
    same_args = tables_[table].filled &&
                SameArguments(tables_[table], call.arguments, SandboxOf(L).limits().max_json_depth);
  }
  if (same_id && same_tool && same_args && installed_ == static_cast<int>(table)) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, call_ref_);
    return;
  }
  if (!pushed_ && object) table = TableFor(call.tool);
  pushed_ = false;
  lua_rawgeti(L, LUA_REGISTRYINDEX, call_data_ref_);
  if (!same_id) {
    lua_pushlstring(L, call.id.data(), call.id.size());
    lua_setfield(L, -2, "id");
    id_ = call.id;
  }
  if (!same_tool) {
    PushName(L, call.tool);
    lua_setfield(L, -2, "tool");
    tool_ = call.tool;
  }
  if (object) {
    ArgsTable& t = tables_[table];
    if (!same_args) {
      FillArguments(L, t, call.arguments);
      KeepArguments(t, call.arguments);
      t.filled = true;
    }
    if (installed_ != static_cast<int>(table)) {
      // Point the persistent args proxy at this tool's table (its data holds
      // no writable table: every nested value is a read-only proxy).
      installed_ = -1;
      lua_rawgeti(L, LUA_REGISTRYINDEX, args_meta_ref_);
      lua_rawgeti(L, LUA_REGISTRYINDEX, t.ref);
      lua_setfield(L, -2, "__index");
      lua_pop(L, 1);
      lua_rawgeti(L, LUA_REGISTRYINDEX, args_ref_);
      lua_setfield(L, -2, "args");
      installed_ = static_cast<int>(table);
    }
  } else {
    installed_ = -1;
    if (call.arguments.is_array()) {
      PushReadOnly(L, call.arguments);
    } else {
      // Not an object: call.args is the args proxy over an empty table.
      lua_rawgeti(L, LUA_REGISTRYINDEX, args_meta_ref_);
      lua_createtable(L, 0, 0);
      lua_setfield(L, -2, "__index");
      lua_pop(L, 1);
      lua_rawgeti(L, LUA_REGISTRYINDEX, args_ref_);
    }
    lua_setfield(L, -2, "args");
  }
  lua_pop(L, 1);
  pushed_ = true;
  lua_rawgeti(L, LUA_REGISTRYINDEX, call_ref_);
}

void CallView::FillArguments(lua_State* L, ArgsTable& t, const nlohmann::json& arguments) {
  // Refill the tool's data table in place: clear the previous call's fields,
  // then set this call's. Calls to one tool share their argument names, so
  // the table keeps its slots and a check allocates nothing here but the
  // argument values. (Setting an existing field to nil during lua_next is
  // allowed; adding one is not, hence two passes.) With `known` (t.flat names
  // the fields the table holds) only the fields this call lacks are cleared,
  // without walking the table, and the fields it holds with the same value
  // are left as they are.
  const bool known = t.filled && t.flat_valid;
  t.filled = false;
  lua_rawgeti(L, LUA_REGISTRYINDEX, t.ref);
  const int data = lua_gettop(L);
  if (known) {
    for (const FlatArgument& old : t.flat) {
      if (arguments.contains(old.key)) continue;
      PushName(L, old.key);
      lua_pushnil(L);
      lua_rawset(L, data);
    }
  } else {
    lua_pushnil(L);
    while (lua_next(L, data)) {
      lua_pop(L, 1);
      lua_pushvalue(L, -1);
      lua_pushnil(L);
      lua_rawset(L, data);
    }
  }
  // Both are in key order (json objects are sorted maps).
  auto old = t.flat.cbegin();
  for (const auto& [k, v] : arguments.get_ref<const nlohmann::json::object_t&>()) {
    if (known) {
      while (old != t.flat.cend() && old->key < k) ++old;
      if (old != t.flat.cend() && old->key == k && SameScalar(v, old->text, old->type, old->bits))
        continue;
    }
    PushName(L, k);
    PushReadOnly(L, v, 1);
    lua_rawset(L, data);
  }
  lua_pop(L, 1);
}

}  // namespace taskledger::policy_internal
