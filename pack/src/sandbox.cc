// Sandbox implementation: allocator cap, instruction/deadline hook, library
// selection, locked globals, guarded pattern functions and protected calls.
// The choices follow Redis scripting (see internal/sandbox.h and
// docs/rule-api.md, "Sandbox"). Not thread-safe: one per thread.
#include "taskledger/pack/lua/sandbox.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "taskledger/pack/lua/lua_json.h"
#include "taskledger/pack/lua/pattern_guard.h"

namespace taskledger::lua {

const char kAllowToken = 'a';
const char kDenyToken = 'd';
const char kApprovalToken = 'r';
const char kConfirmToken = 'c';

namespace {

constexpr int kHookEvery = 1000;

// Base-library names removed: code loading, GC control, output, raw writes
// (which could defeat read-only proxies) and the real globals table.
constexpr const char* kRemovedBase[] = {
    "print",          "load",   "loadstring", "dofile", "loadfile",
    "collectgarbage", "rawset", "require",    "warn",   "_G"};

struct ProtectedCtx {
  void (*thunk)(lua_State*, void*);
  void* body;
};

// The registry names of the verdicts' metatable and of the one allow() value.
constexpr const char* kVerdictMeta = "taskledger.verdict";
constexpr const char* kAllowVerdict = "taskledger.allow";

// A verdict's userdata block; its text is the userdata's first user value.
struct VerdictBlock {
  const char* token;
};

void PushNewVerdict(lua_State* L, const char* token) {
  auto* block = static_cast<VerdictBlock*>(lua_newuserdatauv(L, sizeof(VerdictBlock), 1));
  block->token = token;
  luaL_setmetatable(L, kVerdictMeta);
}

// allow(): the one allow value, held as the closure's upvalue (no lookup,
// no allocation: most rules return it on most checks).
int VerdictAllow(lua_State* L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  return 1;
}

int VerdictWithText(lua_State* L, const char* token, const char* fn, const char* what) {
  if (lua_type(L, 1) != LUA_TSTRING || lua_rawlen(L, 1) == 0) {
    RaiseError(L, std::string(fn) + "() needs a non-empty " + what + " string");
  }
  lua_settop(L, 1);
  PushNewVerdict(L, token);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  return 1;
}

// tostring(verdict): "deny: <reason>", "allow".
int VerdictToString(lua_State* L) {
  std::optional<Verdict> v = ReadVerdict(L, 1);
  if (!v) return 0;
  const char* name = "confirm";
  if (v->token == &kAllowToken) {
    name = "allow";
  } else if (v->token == &kDenyToken) {
    name = "deny";
  } else if (v->token == &kApprovalToken) {
    name = "require_approval";
  }
  if (v->text.empty()) {
    lua_pushstring(L, name);
  } else {
    lua_pushfstring(L, "%s: %s", name, std::string(v->text).c_str());
  }
  return 1;
}

// Creates the verdicts' metatable and the one allow value, and pushes the
// allow() function.
void InstallVerdicts(lua_State* L) {
  luaL_newmetatable(L, kVerdictMeta);
  lua_pushliteral(L, "verdict");
  lua_setfield(L, -2, "__metatable");
  lua_pushcfunction(L, VerdictToString);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
  PushNewVerdict(L, &kAllowToken);
  SandboxOf(L).SetAllowVerdict(lua_touserdata(L, -1));
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, kAllowVerdict);  // kept alive whatever Lua does
  lua_pushcclosure(L, VerdictAllow, 1);
}

int VerdictDeny(lua_State* L) {
  return VerdictWithText(L, &kDenyToken, "deny", "reason (what is wrong and what to do instead)");
}
int VerdictApproval(lua_State* L) {
  return VerdictWithText(L, &kApprovalToken, "require_approval", "reason");
}
int VerdictConfirm(lua_State* L) {
  return VerdictWithText(L, &kConfirmToken, "confirm", "question");
}

// setmetatable without finalizers: a __gc would run rule code at an arbitrary
// later point (another rule, another check), outside any rule's accounting.
int SafeSetMetatable(lua_State* L) {
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    bool has_gc = lua_rawget(L, 2) != LUA_TNIL;
    lua_pop(L, 1);
    if (has_gc) RaiseError(L, "setmetatable: __gc metamethods are not allowed in rules");
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

// Lua calls an error's message handler before unwinding, and when the error
// comes from a hook it does so with hooks disabled: a Lua handler reached from
// the budget kill would run unmetered. So xpcall gets this C handler, which
// hands over to the rule's handler (upvalue 1) only for ordinary errors.
int GuardedMessageHandler(lua_State* L) {
  if (SandboxOf(L).budget_tripped()) return 1;
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

int SafeXpcall(lua_State* L) {
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, GuardedMessageHandler, 1);
  lua_replace(L, 2);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

// string.find/match/gmatch/gsub: length caps and the backtracking bound
// before handing over to Lua's own implementation (upvalue 1, a C function,
// called directly on this frame's stack: no second call frame). Upvalue 2 is
// the function name, upvalue 3 is 1 for find (which has a "plain" flag) and 2
// for gmatch (which scans every position).
int GuardedPattern(lua_State* L) {
  const Sandbox& sb = SandboxOf(L);
  const char* name = lua_tostring(L, lua_upvalueindex(2));
  lua_Integer kind = lua_tointeger(L, lua_upvalueindex(3));
  size_t ls = 0, lp = 0;
  luaL_checklstring(L, 1, &ls);
  const char* p = luaL_checklstring(L, 2, &lp);
  const CheckerLimits& lim = sb.limits();
  if (ls > lim.pattern_max_subject) {
    luaL_error(L, "%s: subject of %d bytes is longer than the %d allowed for patterns", name,
               static_cast<int>(ls), static_cast<int>(lim.pattern_max_subject));
  }
  if (lp > lim.pattern_max_pattern) {
    luaL_error(L, "%s: pattern of %d bytes is longer than the %d allowed", name,
               static_cast<int>(lp), static_cast<int>(lim.pattern_max_pattern));
  }
  bool plain = kind == 1 && lua_toboolean(L, 4);
  if (!plain) {
    double work = EstimatePatternWork(std::string_view(p, lp), ls, kind == 2);
    if (work > lim.pattern_max_work) {
      char msg[600];
      std::snprintf(msg, sizeof msg,
                    "%s: pattern '%.200s' may backtrack too much on a %zu-byte subject (bound "
                    "%.3g steps, limit %.3g); use fewer '*', '+', '-' items, anchor it with '^', "
                    "or shorten the subject",
                    name, p, ls, work, lim.pattern_max_work);
      luaL_error(L, "%s", msg);
    }
  }
  // The string library's functions read only their arguments (no upvalues),
  // so they run on this frame as if Lua had called them.
  return lua_tocfunction(L, lua_upvalueindex(1))(L);
}

void GuardStringFunction(lua_State* L, int lib, const char* field, int kind) {
  lua_getfield(L, lib, field);
  // GuardedPattern calls it on its own stack: it must be a C function
  // without upvalues (as the string library's are).
  if (lua_tocfunction(L, -1) == nullptr || lua_getupvalue(L, -1, 1) != nullptr) {
    luaL_error(L, "string.%s is not a C function without upvalues", field);
  }
  lua_pushfstring(L, "string.%s", field);
  lua_pushinteger(L, kind);
  lua_pushcclosure(L, GuardedPattern, 3);
  lua_setfield(L, lib, field);
}

// Opens library `name` with `open`, removes `removed`, and stores a read-only
// proxy of it in the globals table at index `g`. Returns with the real library
// table on the stack top.
void OpenLibrary(lua_State* L, int g, const char* name, lua_CFunction open,
                 std::initializer_list<const char*> removed) {
  luaL_requiref(L, name, open, 0);
  for (const char* r : removed) {
    lua_pushnil(L);
    lua_setfield(L, -2, r);
  }
  lua_pushvalue(L, -1);
  WrapReadOnly(L, -1);
  lua_setfield(L, g, name);
}

}  // namespace

Sandbox& SandboxOf(lua_State* L) { return **static_cast<Sandbox**>(lua_getextraspace(L)); }

void* Sandbox::Alloc(void* ud, void* ptr, size_t osize, size_t nsize) {
  auto* sb = static_cast<Sandbox*>(ud);
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    std::free(ptr);
    sb->used_ -= old;
    return nullptr;
  }
  if (nsize > old && sb->used_ + (nsize - old) > sb->cap_) return nullptr;
  void* p = std::realloc(ptr, nsize);
  if (p == nullptr) return nullptr;
  sb->used_ = sb->used_ - old + nsize;
  return p;
}

void Sandbox::Hook(lua_State* L, lua_Debug*) {
  Sandbox& sb = SandboxOf(L);
  if (!sb.metered_) return;
  if (!sb.tripped_) {
    sb.remaining_ -= kHookEvery;
    bool late = std::chrono::steady_clock::now() >= sb.deadline_;
    if (sb.remaining_ > 0 && !late) return;
    sb.tripped_ = true;
    sb.tripped_what_ =
        late ? "deadline of " + std::to_string(sb.limits_.deadline_ms) + " ms exceeded"
             : "instruction budget of " + std::to_string(sb.limits_.instruction_budget) +
                   " exceeded";
    // From now on every instruction raises again, so a pcall in the rule
    // cannot swallow the kill: the code after it fails at once.
    lua_sethook(L, Hook, LUA_MASKCOUNT, 1);
  }
  luaL_error(L, "%s", sb.tripped_what_.c_str());
}

void Sandbox::ArmBudget(int64_t instructions, std::chrono::steady_clock::time_point start) {
  remaining_ = instructions;
  tripped_ = false;
  metered_ = true;
  deadline_ = start + std::chrono::milliseconds(limits_.deadline_ms);
  lua_sethook(L_, Hook, LUA_MASKCOUNT, kHookEvery);
}

void Sandbox::DisarmBudget() {
  metered_ = false;
  lua_sethook(L_, nullptr, 0, 0);
}

int Sandbox::Trampoline(lua_State* L) {
  auto* ctx = static_cast<ProtectedCtx*>(lua_touserdata(L, 1));
  lua_settop(L, 0);
  std::string failure;
  // Only std::exception: Lua's own errors (thrown as C++ exceptions in this
  // build) must pass through to lua_pcall untouched.
  try {
    ctx->thunk(L, ctx->body);
  } catch (const std::exception& e) {
    failure = e.what();
    if (failure.empty()) failure = "exception";
  }
  if (!failure.empty()) luaL_error(L, "internal error: %s", failure.c_str());
  return 0;
}

int Sandbox::MessageHandler(lua_State* L) {
  switch (lua_type(L, 1)) {
    case LUA_TSTRING:
      return 1;
    case LUA_TNUMBER:
      lua_pushstring(L, lua_tostring(L, 1));
      return 1;
    case LUA_TNIL:
      lua_pushliteral(L, "error object is nil");
      return 1;
    default:
      // Never call __tostring here: that would run rule code outside any check.
      lua_pushfstring(L, "error object is a %s value", luaL_typename(L, 1));
      return 1;
  }
}

int Sandbox::EnvNewIndex(lua_State* L) {
  Sandbox& sb = SandboxOf(L);
  if (lua_type(L, 2) != LUA_TSTRING) RaiseError(L, "global names must be strings");
  std::string name = lua_tostring(L, 2);
  if (!sb.declaring_) {
    RaiseError(L, "assignment to global '" + name + "': rules may not write globals (use local)");
  }
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) {
    auto o = std::find(sb.overridable_.begin(), sb.overridable_.end(), name);
    if (o == sb.overridable_.end()) RaiseError(L, "global '" + name + "' is already defined");
    sb.overridable_.erase(o);
  }
  lua_pop(L, 1);
  lua_settop(L, 3);
  lua_rawset(L, lua_upvalueindex(1));
  return 0;
}

int Sandbox::GlobalMissing(lua_State* L) {
  const char* name = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "?";
  RaiseError(L, std::string("undeclared global '") + name + "'");
}

Result<std::unique_ptr<Sandbox>> Sandbox::Create(const CheckerLimits& limits) {
  std::unique_ptr<Sandbox> sb(new Sandbox(limits));
  // Room for the state itself even under tiny test caps.
  sb->cap_ = std::max<size_t>(limits.memory_limit_bytes, 64u << 10);
  sb->L_ = lua_newstate(&Sandbox::Alloc, sb.get());
  if (sb->L_ == nullptr) return Status::Internal("cannot create a Lua state");
  *static_cast<Sandbox**>(lua_getextraspace(sb->L_)) = sb.get();
  Status st = sb->Protected([&](lua_State* L) { sb->Setup(L); });
  if (!st.ok()) return Status(st.code(), "setting up the Lua sandbox: " + st.message());
  return sb;
}

Sandbox::~Sandbox() {
  if (L_ != nullptr) lua_close(L_);
}

void Sandbox::Setup(lua_State* L) {
  lua_pushglobaltable(L);
  int g = lua_gettop(L);
  luaL_requiref(L, "_G", luaopen_base, 0);
  lua_pop(L, 1);
  for (const char* name : kRemovedBase) {
    lua_pushnil(L);
    lua_setfield(L, g, name);
  }
  lua_getfield(L, g, "setmetatable");
  lua_pushcclosure(L, SafeSetMetatable, 1);
  lua_setfield(L, g, "setmetatable");
  lua_getfield(L, g, "xpcall");
  lua_pushcclosure(L, SafeXpcall, 1);
  lua_setfield(L, g, "xpcall");

  OpenLibrary(L, g, "string", luaopen_string, {"dump"});
  int lib = lua_gettop(L);
  GuardStringFunction(L, lib, "find", 1);
  GuardStringFunction(L, lib, "match", 0);
  GuardStringFunction(L, lib, "gmatch", 2);
  GuardStringFunction(L, lib, "gsub", 0);
  // Strings share one metatable whose __index is the real string table; hide it.
  lua_pushliteral(L, "");
  lua_getmetatable(L, -1);
  lua_pushliteral(L, "read-only");
  lua_setfield(L, -2, "__metatable");
  lua_settop(L, g);
  OpenLibrary(L, g, "table", luaopen_table, {});
  OpenLibrary(L, g, "math", luaopen_math, {"randomseed"});
  OpenLibrary(L, g, "utf8", luaopen_utf8, {});
  lua_settop(L, g);

  InstallVerdicts(L);
  lua_setfield(L, g, "allow");
  lua_pushcfunction(L, VerdictDeny);
  lua_setfield(L, g, "deny");
  lua_pushcfunction(L, VerdictApproval);
  lua_setfield(L, g, "require_approval");
  lua_pushcfunction(L, VerdictConfirm);
  lua_setfield(L, g, "confirm");

  // Reading a name the globals table lacks is an error.
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, GlobalMissing);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, g);

  // The environment rules see: always empty, so every write reaches
  // __newindex; reads fall through to the (unreachable) globals table.
  lua_createtable(L, 0, 0);
  lua_createtable(L, 0, 3);
  lua_pushvalue(L, g);
  lua_setfield(L, -2, "__index");
  lua_pushvalue(L, g);
  lua_pushcclosure(L, EnvNewIndex, 1);
  lua_setfield(L, -2, "__newindex");
  lua_pushliteral(L, "locked");
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  env_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_settop(L, g - 1);
}

void Sandbox::DefineGlobal(const char* name) {
  lua_pushglobaltable(L_);
  lua_insert(L_, -2);
  lua_setfield(L_, -2, name);
  lua_pop(L_, 1);
}

void Sandbox::LoadChunk(std::string_view name, std::string_view text) {
  std::string chunk = "=" + std::string(name);
  if (luaL_loadbufferx(L_, text.data(), text.size(), chunk.c_str(), "t") != LUA_OK) lua_error(L_);
  lua_rawgeti(L_, LUA_REGISTRYINDEX, env_ref_);
  if (lua_setupvalue(L_, -2, 1) == nullptr) lua_pop(L_, 1);
}

Status Sandbox::ErrorStatus(int code, lua_State* L) {
  std::string msg;
  if (lua_type(L, -1) == LUA_TSTRING) {
    msg = lua_tostring(L, -1);
  } else if (lua_isnil(L, -1)) {
    msg = "error object is nil";
  } else {
    msg = std::string("error object is a ") + luaL_typename(L, -1) + " value";
  }
  if (code == LUA_ERRMEM) {
    return Status::LimitExceeded("memory limit of " + std::to_string(cap_) + " bytes exceeded");
  }
  if (tripped_) {
    // The message may come from rule code that caught the kill and raised
    // something else; the budget is the cause.
    return Status::LimitExceeded(msg.find(tripped_what_) != std::string::npos ? msg
                                                                              : tripped_what_);
  }
  if (code == LUA_ERRERR) return Status::PolicyError("error while handling an error: " + msg);
  if (code != LUA_ERRRUN && code != LUA_ERRSYNTAX) return Status::Internal(msg);
  return Status::PolicyError(msg);
}

Status Sandbox::RunProtected(void (*thunk)(lua_State*, void*), void* body) {
  int top = lua_gettop(L_);
  if (!lua_checkstack(L_, 4)) return Status::Internal("Lua stack exhausted");
  ProtectedCtx ctx{thunk, body};
  lua_pushcfunction(L_, Trampoline);
  lua_pushlightuserdata(L_, &ctx);
  int rc = lua_pcall(L_, 1, 0, 0);
  Status st = rc == LUA_OK ? Status::Ok() : ErrorStatus(rc, L_);
  lua_settop(L_, top);
  return st;
}

Status Sandbox::Call(int nargs, int nresults) {
  int base = lua_gettop(L_) - nargs;
  lua_pushcfunction(L_, MessageHandler);
  lua_insert(L_, base);
  int rc = lua_pcall(L_, nargs, nresults, base);
  if (rc == LUA_OK) {
    lua_remove(L_, base);
    if (tripped_) {
      // The rule swallowed the kill with pcall and still returned.
      lua_settop(L_, base - 1);
      return Status::LimitExceeded(tripped_what_);
    }
    return Status::Ok();
  }
  Status st = ErrorStatus(rc, L_);
  lua_settop(L_, base - 1);
  return st;
}

void Sandbox::Recover() {
  DisarmBudget();
  lua_gc(L_, LUA_GCCOLLECT);
}

std::optional<Verdict> ReadVerdict(lua_State* L, int idx) {
  // The common case first: allow() is one value, known by its address.
  if (lua_touserdata(L, idx) == SandboxOf(L).allow_verdict()) return Verdict{&kAllowToken, {}};
  auto* block = static_cast<VerdictBlock*>(luaL_testudata(L, idx, kVerdictMeta));
  if (block == nullptr) return std::nullopt;
  Verdict v{block->token, {}};
  if (lua_getiuservalue(L, idx, 1) == LUA_TSTRING) {
    size_t n = 0;
    const char* s = lua_tolstring(L, -1, &n);
    v.text = std::string_view(s, n);  // the userdata keeps the string alive
  }
  lua_pop(L, 1);
  return v;
}

}  // namespace taskledger::lua
