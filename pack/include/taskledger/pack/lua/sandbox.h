// Sandbox: the one owner of a lua_State that runs untrusted rule-pack code.
// "Most Lua/C pain is in this file" (with sandbox.cc and lua_json.cc): the
// allocator with a memory cap, the instruction-count hook with a re-arming
// budget and a wall-clock deadline, the selective library set, the locked
// global environment, read-only proxies and protected calls.
//
// Not thread-safe: one Sandbox per thread (it belongs to one PolicyChecker).
// Every Lua API use happens inside Protected(), so a Lua error can never reach
// the panic handler, and C++ exceptions thrown by our own code inside it are
// converted to Lua errors before they meet Lua's frames.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lua.hpp"
#include "taskledger/base/status.h"
#include "taskledger/pack/limits.h"

namespace taskledger::lua {

// What allow()/deny()/require_approval()/confirm() return: ONE value (a
// userdata with a locked metatable, which Lua code can neither forge nor
// change) that carries its outcome token and its text, so a verdict can be
// kept in a variable, passed to and returned from helpers without losing its
// reason. allow() returns one shared value and allocates nothing.
extern const char kAllowToken;
extern const char kDenyToken;
extern const char kApprovalToken;
extern const char kConfirmToken;

struct Verdict {
  const char* token = nullptr;  // &kAllowToken, &kDenyToken, ...
  std::string_view text;        // empty for allow(); valid while the value is on the stack
};
// The verdict at `idx`, or nullopt if the value there is not one.
std::optional<Verdict> ReadVerdict(lua_State* L, int idx);

class Sandbox {
 public:
  static Result<std::unique_ptr<Sandbox>> Create(const CheckerLimits& limits);
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  lua_State* state() const { return L_; }
  const CheckerLimits& limits() const { return limits_; }
  size_t memory_in_use() const { return used_; }

  // Runs body(L) in protected mode. Lua errors (and std::exceptions thrown by
  // body) come back as a Status: PolicyError, or LimitExceeded for memory,
  // budget and deadline. The stack is restored to its height on entry.
  template <class Fn>
  Status Protected(Fn&& body) {
    return RunProtected(&Thunk<Fn>, &body);
  }

  // Inside Protected(): calls the function below `nargs` arguments with the
  // message handler. On success leaves `nresults` values and returns Ok; on
  // failure leaves nothing and returns the error (message without
  // traceback).
  Status Call(int nargs, int nresults);

  // Starts a budget of `instructions` VM instructions and limits().deadline_ms
  // counted from `start` (a caller that has just read the clock passes it).
  void ArmBudget(int64_t instructions,
                 std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now());
  // Stops counting (host code runs unmetered).
  void DisarmBudget();
  // True once the budget or deadline ran out since ArmBudget.
  bool budget_tripped() const { return tripped_; }
  // The one value allow() returns (its userdata block), set when the sandbox
  // is set up: ReadVerdict knows it by its address.
  const void* allow_verdict() const { return allow_verdict_; }
  void SetAllowVerdict(const void* v) { allow_verdict_ = v; }

  // Inside Protected(): compiles a text chunk (never bytecode) whose globals
  // are the sandbox environment; leaves the function on the stack.
  void LoadChunk(std::string_view name, std::string_view text);
  // While true, chunks may declare new globals (pack load); afterwards every
  // global write is an error.
  void SetDeclaring(bool on) { declaring_ = on; }
  bool declaring() const { return declaring_; }
  // Inside Protected(): defines global `name` as the value at the top (pops it).
  void DefineGlobal(const char* name);
  // Lets a pack's top level declare its own global `name` once, replacing the
  // builtin (for builtins added after 0.1, such as `log` and `std`, which a
  // 0.1 pack may already define for itself).
  void AllowOverride(std::string name) { overridable_.push_back(std::move(name)); }

  // After an error: collects garbage so a memory bomb's leftovers are gone.
  void Recover();

 private:
  const void* allow_verdict_ = nullptr;
  explicit Sandbox(const CheckerLimits& limits) : limits_(limits) {}
  Status RunProtected(void (*thunk)(lua_State*, void*), void* body);
  template <class Fn>
  static void Thunk(lua_State* L, void* body) {
    (*static_cast<std::remove_reference_t<Fn>*>(body))(L);
  }
  void Setup(lua_State* L);
  Status ErrorStatus(int code, lua_State* L);

  static void* Alloc(void* ud, void* ptr, size_t osize, size_t nsize);
  static void Hook(lua_State* L, lua_Debug* ar);
  static int Trampoline(lua_State* L);
  static int MessageHandler(lua_State* L);
  static int EnvNewIndex(lua_State* L);
  static int GlobalMissing(lua_State* L);

  CheckerLimits limits_;
  lua_State* L_ = nullptr;
  size_t used_ = 0;
  size_t cap_ = 0;
  bool declaring_ = false;
  bool tripped_ = false;
  bool metered_ = false;
  int64_t remaining_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  int env_ref_ = LUA_NOREF;
  std::string tripped_what_;
  std::vector<std::string> overridable_;
};

// The Sandbox that owns `L` (stored in the state's extra space).
Sandbox& SandboxOf(lua_State* L);

}  // namespace taskledger::lua
