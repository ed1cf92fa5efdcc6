// Running a pack's Lua and collecting its rule{} / extractor{} declarations
// (see internal/compiled_pack.h). Declarations are validated strictly (unknown
// fields, wrong types) because a typo in a policy silently weakens it.
#include "taskledger/pack/lua/compiled_pack.h"

#include <algorithm>
#include <cstring>

#include "taskledger/pack/lua/lua_json.h"
#include "taskledger/pack/lua/lua_std.h"

namespace taskledger::lua {
namespace {

constexpr size_t kMaxIdLength = 200;

CompiledPack& PackOf(lua_State* L) {
  return *static_cast<CompiledPack*>(lua_touserdata(L, lua_upvalueindex(1)));
}

// Pushes t[name] without metamethods.
int RawField(lua_State* L, int t, const char* name) {
  lua_pushstring(L, name);
  return lua_rawget(L, t);
}

void CheckFields(lua_State* L, const char* what, std::initializer_list<const char*> allowed) {
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    lua_pop(L, 1);
    bool known = false;
    if (lua_type(L, -1) == LUA_TSTRING) {
      for (const char* a : allowed) known = known || std::strcmp(a, lua_tostring(L, -1)) == 0;
    }
    if (!known) {
      std::string field =
          lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1);
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      RaiseError(L, std::string(what) + "{}: unknown field '" + field + "' (fields: " + list + ")");
    }
  }
}

std::string ReadId(lua_State* L, const char* what) {
  if (RawField(L, 1, "id") != LUA_TSTRING || lua_rawlen(L, -1) == 0 ||
      lua_rawlen(L, -1) > kMaxIdLength) {
    RaiseError(L, std::string(what) + "{}: id must be a non-empty string of at most 200 bytes");
  }
  std::string id = lua_tostring(L, -1);
  lua_pop(L, 1);
  return id;
}

// `optional`: an empty or missing list is allowed (an extractor that runs on
// user messages only).
std::vector<std::string> ReadTools(lua_State* L, const std::string& id, bool optional = false) {
  std::vector<std::string> tools;
  int t = RawField(L, 1, "tools");
  if (t == LUA_TSTRING) {
    tools.emplace_back(lua_tostring(L, -1));
  } else if (t == LUA_TTABLE) {
    lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, -1));
    for (lua_Integer i = 1; i <= n; ++i) {
      if (lua_rawgeti(L, -1, i) != LUA_TSTRING) RaiseError(L, id + ": tools must be strings");
      tools.emplace_back(lua_tostring(L, -1));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  if (tools.empty() && !optional) {
    RaiseError(L, id + ": tools must list at least one tool name or glob");
  }
  return tools;
}

// Stores the function field `name` in the registry and returns the reference.
int ReadFunction(lua_State* L, const std::string& id, const char* name) {
  if (RawField(L, 1, name) != LUA_TFUNCTION) {
    RaiseError(L, id + ": '" + name + "' must be a function");
  }
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

int DeclareRule(lua_State* L) {
  CompiledPack& pack = PackOf(L);
  if (!pack.sandbox->declaring()) RaiseError(L, "rule{} may only be called while the pack loads");
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  CheckFields(L, "rule", {"id", "tools", "priority", "description", "check", "why", "facts"});
  CompiledRule r;
  r.info.id = ReadId(L, "rule");
  for (const CompiledRule& other : pack.rules) {
    if (other.info.id == r.info.id) RaiseError(L, "duplicate rule id '" + r.info.id + "'");
  }
  r.info.tools = ReadTools(L, r.info.id);
  int t = RawField(L, 1, "priority");
  if (t != LUA_TNIL) {
    if (!lua_isinteger(L, -1)) RaiseError(L, r.info.id + ": priority must be an integer");
    r.info.priority = lua_tointeger(L, -1);
  }
  lua_pop(L, 1);
  t = RawField(L, 1, "description");
  if (t != LUA_TNIL) {
    if (t != LUA_TSTRING) RaiseError(L, r.info.id + ": description must be a string");
    r.info.description = lua_tostring(L, -1);
  }
  lua_pop(L, 1);
  r.info.file = pack.loading_file;
  r.id = r.info.id;
  // A rule has a check (returns a verdict) or a why (returns a reason or nil).
  const bool has_check = RawField(L, 1, "check") != LUA_TNIL;
  const bool has_why = RawField(L, 1, "why") != LUA_TNIL;
  lua_pop(L, 2);
  if (has_check && has_why) {
    RaiseError(L, r.info.id +
                      ": give either 'check' (returns a verdict) or 'why' (returns the "
                      "deny reason or nil), not both");
  }
  r.why = has_why;
  pack.rules.push_back(r);  // before taking the ref, so a failed push leaks nothing
  pack.rules.back().ref = ReadFunction(L, r.info.id, has_why ? "why" : "check");
  const int facts = RawField(L, 1, "facts");
  if (facts == LUA_TNIL) return 0;
  if (facts != LUA_TFUNCTION) RaiseError(L, r.info.id + ": 'facts' must be a function");
  for (const CompiledRule& other : pack.rules) {
    if (other.facts_ref == LUA_NOREF) continue;
    lua_rawgeti(L, LUA_REGISTRYINDEX, other.facts_ref);
    const bool same = lua_rawequal(L, -1, -2) != 0;
    lua_pop(L, 1);
    if (same) {
      pack.rules.back().facts_ref = other.facts_ref;
      return 0;
    }
  }
  pack.rules.back().facts_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

int DeclareExtractor(lua_State* L) {
  CompiledPack& pack = PackOf(L);
  if (!pack.sandbox->declaring()) {
    RaiseError(L, "extractor{} may only be called while the pack loads");
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  CheckFields(L, "extractor", {"id", "tools", "user", "extract"});
  CompiledExtractor x;
  x.info.id = ReadId(L, "extractor");
  for (const CompiledExtractor& other : pack.extractors) {
    if (other.info.id == x.info.id) RaiseError(L, "duplicate extractor id '" + x.info.id + "'");
  }
  const int user = RawField(L, 1, "user");
  if (user != LUA_TNIL && user != LUA_TBOOLEAN)
    RaiseError(L, x.info.id + ": user must be a boolean");
  x.info.user = lua_toboolean(L, -1) != 0;
  lua_pop(L, 1);
  x.info.tools = ReadTools(L, x.info.id, /*optional=*/x.info.user);
  x.info.file = pack.loading_file;
  pack.extractors.push_back(x);
  pack.extractors.back().ref = ReadFunction(L, x.info.id, "extract");
  return 0;
}

constexpr const char* kModules = "taskledger.modules";
const char kLoading = 0;  // a module's cache slot while it runs (cycle detection)

// require(name): lib/<name>.lua, run once; its result is cached.
int Require(lua_State* L) {
  CompiledPack& pack = PackOf(L);
  size_t n = 0;
  const char* s = luaL_checklstring(L, 1, &n);
  std::string name(s, n);
  if (name.empty() || name.size() > 200 ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-/") !=
          std::string::npos ||
      name.find("//") != std::string::npos || name.front() == '/') {
    RaiseError(L, "require: '" + name + "' is not a library name (letters, digits, _ - /)");
  }
  lua_settop(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, kModules);
  lua_pushvalue(L, 1);
  if (lua_rawget(L, 2) != LUA_TNIL) {
    if (lua_touserdata(L, -1) == &kLoading)
      RaiseError(L, "require: '" + name + "' requires itself");
    return 1;
  }
  lua_pop(L, 1);
  const std::string path = "lib/" + name + ".lua";
  const PackFile* file = nullptr;
  for (const PackFile* f : pack.lib_files) {
    if (f->path == path) file = f;
  }
  if (file == nullptr) RaiseError(L, "require: the pack has no " + path);
  Sandbox& box = *pack.sandbox;
  box.LoadChunk(path, file->contents);  // a syntax error raises here, before any state changes
  lua_pushvalue(L, 1);
  lua_pushlightuserdata(L, const_cast<char*>(&kLoading));
  lua_rawset(L, 2);
  const bool declaring = box.declaring();
  box.SetDeclaring(false);  // a library returns what it shares; it declares no globals
  // Protected, so the cache slot and the declaring flag are restored before
  // the error goes on (a budget kill re-fires in the caller's code anyway).
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    box.SetDeclaring(declaring);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    lua_rawset(L, 2);
    lua_error(L);
  }
  box.SetDeclaring(declaring);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushboolean(L, 1);
  }
  lua_pushvalue(L, 1);
  lua_pushvalue(L, -2);
  lua_rawset(L, 2);
  return 1;
}

int DiscardLog(lua_State*) { return 0; }

}  // namespace

Result<std::unique_ptr<CompiledPack>> CompilePack(const std::vector<const PackFile*>& lua_files,
                                                  const CheckerLimits& limits,
                                                  const std::function<void(lua_State*)>& install,
                                                  const std::vector<const PackFile*>& lib_files) {
  auto pack = std::make_unique<CompiledPack>();
  pack->lib_files = lib_files;
  Result<std::unique_ptr<Sandbox>> sb = Sandbox::Create(limits);
  if (!sb) return sb.error();
  pack->sandbox = std::move(sb.value());
  Sandbox& box = *pack->sandbox;
  CompiledPack* raw = pack.get();
  Status st = box.Protected([&](lua_State* L) {
    lua_pushlightuserdata(L, raw);
    lua_pushcclosure(L, DeclareRule, 1);
    box.DefineGlobal("rule");
    lua_pushlightuserdata(L, raw);
    lua_pushcclosure(L, DeclareExtractor, 1);
    box.DefineGlobal("extractor");
    InstallStd(box, L);
    lua_pushcfunction(L, DiscardLog);
    box.DefineGlobal("log");
    box.AllowOverride("log");
    lua_createtable(L, 0, 0);
    lua_setfield(L, LUA_REGISTRYINDEX, kModules);
    lua_pushlightuserdata(L, raw);
    lua_pushcclosure(L, Require, 1);
    box.DefineGlobal("require");
    if (install) install(L);
  });
  if (!st.ok()) return Status::Internal("setting up the rule API: " + st.message());

  box.SetDeclaring(true);
  for (const PackFile* f : lua_files) {
    raw->loading_file = f->path;
    // The top level of a pack gets ten times a check's budget: it may build
    // lookup tables.
    box.ArmBudget(limits.instruction_budget * 10);
    Status run = box.Protected([&](lua_State* L) {
      box.LoadChunk(f->path, f->contents);
      lua_call(L, 0, 0);
    });
    box.DisarmBudget();
    if (!run.ok()) {
      StatusCode code = run.code() == StatusCode::kLimitExceeded ? StatusCode::kLimitExceeded
                                                                 : StatusCode::kInvalidArgument;
      return Status(code, "loading " + f->path + ": " + run.message());
    }
  }
  box.SetDeclaring(false);
  raw->loading_file.clear();
  std::stable_sort(pack->rules.begin(), pack->rules.end(),
                   [](const CompiledRule& a, const CompiledRule& b) {
                     if (a.info.priority != b.info.priority)
                       return a.info.priority > b.info.priority;
                     return a.info.id < b.info.id;
                   });
  return pack;
}

}  // namespace taskledger::lua
