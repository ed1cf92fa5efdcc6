// Sandbox implementation: the allocator cap, the instruction/deadline hook,
// the locked global environment, chunk loading and protected calls with
// their error mapping. The library set rules see is in sandbox_library.cc,
// the verdict values in verdicts.cc. The choices follow Redis scripting (see
// taskledger/pack/lua/sandbox.h and docs/rule-api.md, "Sandbox"). Not
// thread-safe: one per thread.
#include "taskledger/pack/lua/sandbox.h"

#include <algorithm>
#include <cstdlib>
#include <exception>

#include "internal/sandbox_setup.h"
#include "taskledger/pack/lua/lua_json.h"

namespace taskledger::lua {
namespace {

constexpr int kHookEvery = 1000;

struct ProtectedCtx {
  void (*thunk)(lua_State*, void*);
  void* body;
};

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
  InstallLibraries(L, g);
  InstallVerdicts(L, g);
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

}  // namespace taskledger::lua
