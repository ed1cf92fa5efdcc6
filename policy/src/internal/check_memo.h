// CheckMemo: the rule API's `ledger.memo(fn)`. Within one check, the first
// call runs fn(ledger, call) and keeps what it returned; later calls with the
// same function (from any rule of the check) return the kept value without
// running fn again. Every check starts empty, so a memo never outlives the
// ledger state and call it was computed from. Keyed by the function object: define fn
// once at file level (a closure made inside `check` is a new key each time).
//
// A kept table is shared by the rules that read it, so a table a rule could
// change is handed out read-only: a proxy over it, read-only at every level
// (lua::WrapReadOnly). Tables that refuse writes themselves (read-only
// proxies, records, std.money values) are kept as they are. At most kMaxEntries values are
// kept per check; beyond that fn runs on every call (the result is still
// correct). The proxy of a table value is reused for fn's next table value,
// so a rule that kept one past its check (rules are pure: they should not)
// reads the new value. The function kept last and its value are also held in
// the closure's upvalues, so asking for it again is two upvalue reads (no
// table lookup). Not thread-safe: belongs to one LedgerView.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lua.hpp"

namespace taskledger::policy_internal {

class CheckMemo {
 public:
  static constexpr size_t kMaxEntries = 64;

  // Inside Protected(): sets field "memo" of the table at the top of the
  // stack; fn receives the objects at registry references `ledger_ref` and
  // (SetCall, before any check) `call_ref`.
  void Install(lua_State* L, int ledger_ref);
  void SetCall(int call_ref) { call_ref_ = call_ref; }
  // A new check begins: forget every kept value (lazily, at the next memo).
  void Reset() { ++check_; }

 private:
  static int Memo(lua_State* L);
  // Replaces the plain table at `value` with a read-only proxy over it,
  // reusing the proxy fn's value had in an earlier check (two fewer tables
  // per check).
  void Wrap(lua_State* L, int fn, int value);
  // Pushes the memo table, emptied first if it holds an earlier check's values.
  void PushTable(lua_State* L);

  int ledger_ref_ = LUA_NOREF;
  int call_ref_ = LUA_NOREF;
  int table_ref_ = LUA_NOREF;
  int proxies_ref_ = LUA_NOREF;  // weak keys: fn -> the proxy of its last table value
  uint64_t check_ = 0;           // current check
  uint64_t table_check_ = 0;     // check the table's values belong to
  uint64_t last_check_ = 0;      // check the closure's last-kept (fn, value) belong to
  size_t entries_ = 0;
};

}  // namespace taskledger::policy_internal
