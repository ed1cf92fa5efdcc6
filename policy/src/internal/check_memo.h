// CheckMemo: the rule API's `ledger.memo(fn)`. Within one check, the first
// call runs fn(ledger) and keeps what it returned; later calls with the same
// function (from any rule of the check) return the kept value without running
// fn again. Every check starts empty, so a memo never outlives the ledger
// state and call it was computed from. Keyed by the function object: define fn
// once at file level (a closure made inside `check` is a new key each time).
//
// A kept table is shared by the rules that read it, so a plain table (one
// without a metatable) is handed out read-only: a proxy over it, which must
// be flat (a plain table inside is an error). Tables with a metatable (read-
// only proxies, records, std.money values) are kept as they are. At most kMaxEntries values are
// kept per check; beyond that fn runs on every call (the result is still correct). Not thread-safe:
// belongs to one LedgerView.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lua.hpp"

namespace taskledger::policy_internal {

class CheckMemo {
 public:
  static constexpr size_t kMaxEntries = 64;

  // Inside Protected(): sets field "memo" of the table at the top of the
  // stack; fn receives the object at registry reference `ledger_ref`.
  void Install(lua_State* L, int ledger_ref);
  // A new check begins: forget every kept value (lazily, at the next memo).
  void Reset() { ++check_; }

 private:
  static int Memo(lua_State* L);
  // Pushes the memo table, emptied first if it holds an earlier check's values.
  void PushTable(lua_State* L);

  int ledger_ref_ = LUA_NOREF;
  int table_ref_ = LUA_NOREF;
  uint64_t check_ = 0;        // current check
  uint64_t table_check_ = 0;  // check the table's values belong to
  size_t entries_ = 0;
};

}  // namespace taskledger::policy_internal
