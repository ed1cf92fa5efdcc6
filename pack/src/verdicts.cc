// Verdicts: allow(), deny(), require_approval() and confirm() as ONE Lua value
// each (a userdata with a locked metatable carrying its outcome token and its
// text), their tostring, and ReadVerdict, which tells the checker what a rule
// returned. allow() hands out one shared value and allocates nothing. Part of
// the sandbox (see taskledger/pack/lua/sandbox.h); not thread-safe, like the
// lua_State it works on.
#include <optional>
#include <string>

#include "internal/sandbox_setup.h"
#include "taskledger/pack/lua/lua_json.h"
#include "taskledger/pack/lua/sandbox.h"

namespace taskledger::lua {

const char kAllowToken = 'a';
const char kDenyToken = 'd';
const char kApprovalToken = 'r';
const char kConfirmToken = 'c';

namespace {

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
void PushAllow(lua_State* L) {
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

}  // namespace

void InstallVerdicts(lua_State* L, int g) {
  PushAllow(L);
  lua_setfield(L, g, "allow");
  lua_pushcfunction(L, VerdictDeny);
  lua_setfield(L, g, "deny");
  lua_pushcfunction(L, VerdictApproval);
  lua_setfield(L, g, "require_approval");
  lua_pushcfunction(L, VerdictConfirm);
  lua_setfield(L, g, "confirm");
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
