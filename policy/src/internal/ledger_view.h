// LedgerView: the read-only `ledger` object rules receive, backed directly by
// the LedgerState of the current check (no copy of the ledger is made).
//
// The object is built once per sandbox; Bind() points it at the state, the
// call and the time of one check. Lookups read the bound state's EntryMaps
// directly (O(log n), no allocation). Derived from the state and reused:
// - the index of observed values: built on first use from the whole state,
//   then brought up to date for each later state by diffing the state it was
//   built for against the new one (LedgerState versions share unchanged
//   subtrees, so that costs O(changes * log n), not O(n)); rebuilt whole only
//   when a wall-clock expiry it depends on has passed;
// - per category, while the ViewKey stays the same, a Lua table of the scalar
//   values (and absences) ledger.fact()/identifier()/... already looked up,
//   so a repeated lookup is one Lua table read.
// - the reverse value index of ledger.find() (internal/value_index.h),
//   followed to each bound state by diffing in the same way;
// - the counts ledger.calls() answered (internal/call_counts.h), followed
//   along the call history as it grows.
// The record API (ledger.record/each/find/provenance) is in record_view.cc.
// Not thread-safe: belongs to one Sandbox.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "internal/call_counts.h"
#include "internal/check_memo.h"
#include "internal/value_index.h"
#include "lua.hpp"
#include "taskledger/base/tool_call.h"
#include "taskledger/ledger/decision_record.h"
#include "taskledger/ledger/state.h"
#include "taskledger/policy/checker.h"

namespace taskledger::policy_internal {

// Shared by the rule API's functions: raise a Lua error naming `fn` unless
// the argument at `idx` is a category name / a string.
Category CheckCategory(lua_State* L, int idx, const char* fn);
std::string_view CheckKey(lua_State* L, int idx, const char* fn);
// Pushes {value, turn, source, source_id, verified, rule [, expires_at_turn]
// [, expires_at_ms]} for `e` (what ledger.entry returns).
void PushEntryTable(lua_State* L, const Entry& e);

class LedgerView {
 public:
  // Inside Protected(): creates the `ledger` object in the registry.
  void Install(lua_State* L);
  // `state` and `call` must stay alive until Unbind().
  void Bind(const LedgerState& state, const ProposedCall& call, const ViewKey& key, int64_t now_ms);
  void Unbind();
  // Inside Protected(): pushes the ledger object for the bound state.
  void Push(lua_State* L);
  // The `call` object ledger.memo hands its functions (registry reference).
  void SetMemoCall(int call_ref) { memo_.SetCall(call_ref); }

  // Times the observed-value index was built from the whole state (not
  // counting incremental updates); tests check reuse with it.
  uint64_t index_builds() const { return index_builds_; }
  // Times the reverse value index of ledger.find() was built whole.
  uint64_t find_index_builds() const { return find_index_.builds(); }

  // The read log (read_set.cc). Every lookup of one entry by the rule API
  // notes (category, key) into buffers reused from check to check (no
  // allocation once they have grown); EndRule closes the current rule's set
  // (Bind starts a new log). ResolveReads(k, ...) gives rule k's set (k-th
  // EndRule of this log) resolved against `state` at `now_ms` (the state and
  // time of the check), each (category, key) once in first-read order. At
  // most kMaxReads are kept per rule; dropped(k) says how many were not.
  void NoteRead(Category c, std::string_view key);
  // Inline: the checker calls it after every rule of every check.
  void EndRule() {
    rule_ends_.push_back(noted_size_);
    rule_dropped_.push_back(rule_dropped_now_);
    rule_begin_ = noted_size_;
    rule_dropped_now_ = 0;
  }
  size_t rules_logged() const { return rule_ends_.size(); }
  std::vector<EntryRead> ResolveReads(size_t k, const LedgerState& state, int64_t now_ms) const;
  size_t dropped(size_t k) const { return k < rule_dropped_.size() ? rule_dropped_[k] : 0; }
  static constexpr size_t kMaxReads = 256;

 private:
  static LedgerView& Self(lua_State* L);
  // The live entry at (c, key) in the bound state, noted as read.
  const Entry* Find(Category c, std::string_view key);
  void BuildObservedIndex();
  // Brings the index from indexed_ to *state_ (same wall-clock window).
  void UpdateObservedIndex();
  // Adds (+1) or removes (-1) what entry `e` of a state at `version` contributes.
  void CountObserved(const Entry& e, uint64_t version, int delta);
  void CountObservedKey(std::string key, int delta);
  // Pushes the lookup cache of category `c` (an upvalue of its function),
  // emptied first if it is stale.
  void PushValueCache(lua_State* L, Category c);

  static int Value(lua_State* L);
  static int EntryOf(lua_State* L);
  static int Verified(lua_State* L);
  static int Known(lua_State* L);   // known_view.cc
  static int Single(lua_State* L);  // known_view.cc
  static int Fields(lua_State* L);  // known_view.cc
  static int Keys(lua_State* L);
  static int Observed(lua_State* L);
  static int Confirmed(lua_State* L);
  static int Calls(lua_State* L);  // history_view.cc
  // The record API (record_view.cc).
  static int Record(lua_State* L);
  static int Each(lua_State* L);
  static int Find(lua_State* L);
  static int Provenance(lua_State* L);
  static int Now(lua_State* L);            // std.now(): the decision's clock
  static int RecordedCalls(lua_State* L);  // history_view.cc
  static constexpr int kDefaultRecordedCalls = 20;
  static constexpr int kMaxRecordedCalls = 1000;
  void InstallRecordApi(lua_State* L);
  // Lazy record tables: an empty read-only table per (category, key prefix);
  // reading a field looks it up in the bound state (record_view.cc).
  static int RecordIndex(lua_State* L);
  static int RecordPairs(lua_State* L);
  void PushRecord(lua_State* L, Category c, const std::string& prefix);
  // Reads the (category, prefix) of the record table at `idx`; false if it is none.
  bool RecordTag(lua_State* L, int idx, Category& c, std::string& prefix);
  // A record stored as one structured entry at `key` (whole_record.cc):
  // pushes its value read-only (tagged for provenance), or nil.
  int PushWholeRecord(lua_State* L, Category c, const std::string& key);
  // The structured entry at `key` if it holds `field`, else nullptr.
  const Entry* WholeRecordHolding(Category c, const std::string& key, std::string_view field);
  // True if a live key of `c` starts with `prefix`.
  bool HasLiveUnder(Category c, std::string_view prefix) const;

  const LedgerState* state_ = nullptr;
  const ProposedCall* call_ = nullptr;
  int64_t now_ms_ = 0;
  ViewKey key_;
  int ledger_ref_ = LUA_NOREF;
  int data_ref_ = LUA_NOREF;
  uint64_t pushed_version_ = std::numeric_limits<uint64_t>::max();

  bool index_valid_ = false;
  bool index_behind_ = false;  // valid, but for an earlier view: update by diffing
  int64_t index_from_ms_ = 0;  // the index holds for now_ms in [from, until)
  int64_t index_until_ms_ = 0;
  LedgerState indexed_;  // the state the index describes (shares its nodes)
  std::unordered_map<std::string, uint32_t> observed_;  // scalar key -> entries showing it
  std::string scratch_;                                 // Observed()'s key, reused
  uint64_t index_builds_ = 0;
  ValueIndex find_index_;
  int record_paths_ref_ = LUA_NOREF;  // weak table: record (sub)table -> "<category><key prefix>"
  int record_meta_ref_ = LUA_NOREF;   // the metatable every record table shares

  // The value caches hold for now_ms in [from, until) of the bound view.
  bool cache_stale_[kCategoryCount] = {true, true, true, true};
  int64_t cache_from_ms_ = 0;
  int64_t cache_until_ms_ = 0;
  size_t cache_entries_[kCategoryCount] = {};

  struct NotedRead {
    Category category = Category::kFact;
    std::string key;  // keeps its capacity from check to check
  };
  std::vector<NotedRead> noted_;  // the first noted_size_ hold this log
  size_t noted_size_ = 0;
  size_t rule_begin_ = 0;  // where the current rule's reads start
  size_t rule_dropped_now_ = 0;
  std::vector<size_t> rule_ends_;     // per closed rule: the end of its reads
  std::vector<size_t> rule_dropped_;  // per closed rule: reads beyond kMaxReads
  CheckMemo memo_;                    // ledger.memo: values kept for one check
  CallCounts call_counts_;            // ledger.calls, followed from check to check
};

}  // namespace taskledger::policy_internal
