// ProvenanceView: the provenance functions of the rule API's `call` object —
// call.sources(arg), call.sources_of(value), call.trusted(arg),
// call.untrusted_tokens(arg, kind...), call.explain(arg),
// call.user_messages() and call.designated(value, spec) (docs/rule-api.md,
// "Provenance") — answered from the session's ProvenanceIndex, plus the evidence of every lookup a
// check made, which a denial's decision record keeps. Without a bound index (a checker used outside
// a Session, e.g. `policy check`) the functions raise, so a rule relying on them fails closed. The
// lists sources() and untrusted_tokens() return are read-only and cached per value while the
// index's generation holds, so re-checking a call costs a table lookup; a lookup's evidence is only
// resolved (TakeEvidence) for a decision that needs it. Not thread-safe: one per RuleRuntime.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "lua.hpp"
#include "taskledger/base/tool_call.h"
#include "taskledger/provenance/index.h"
#include "taskledger/provenance/tokens.h"

namespace taskledger::policy_internal {

class ProvenanceView {
 public:
  // Inside Protected(): sets the functions on the table at `call_data`.
  void Install(lua_State* L, int call_data);
  // For one check: the index (may be null: functions raise) and the call.
  void Bind(const provenance::ProvenanceIndex* index, const ProposedCall* call);
  void Unbind();
  // The lookups of the bound check as JSON: [{arg, value, sources: [...]}]
  // (an untrusted_tokens lookup gives one per untrusted token); consumes them.
  // Call before Unbind.
  nlohmann::json TakeEvidence();

  // For the Lua functions (provenance_view.cc).
  struct Lookup {
    std::string arg;  // "" for sources_of
    std::string value;
    provenance::TokenKinds kinds = 0;  // untrusted_tokens: the kinds asked; else 0
  };
  const provenance::ProvenanceIndex* index() const { return index_; }
  const ProposedCall* call() const { return call_; }
  void Record(Lookup lookup);
  // Pushes the cache table of the bound index's generation (a fresh one when
  // the index changed since it was filled).
  void PushCache(lua_State* L);
  // untrusted_tokens lists of the cache's generation: the integer slot of the
  // list in the cache table, by kinds byte + text. Looked up without making
  // the text (a 2 KB body) a Lua string per check: copying and hashing it was
  // most of a check, and its garbage the check's tail. `SlotKey` is scratch.
  std::unordered_map<std::string, lua_Integer>& token_slots() { return token_slots_; }
  std::string& SlotKey() { return slot_key_; }
  // Pushes the table of read-only single-source tables (by SourceId + 1) of
  // index `instance`. A source never changes once added, so its table
  // outlives the index's generations: the lookups after a new output reuse
  // the tables of every source they had seen. A fresh table when another
  // index is bound, or once it holds kMaxSourceTables (bounded Lua memory).
  void PushSourceTables(lua_State* L, std::uint64_t instance);
  void NoteSourceTable() { ++source_tables_count_; }

 private:
  const provenance::ProvenanceIndex* index_ = nullptr;
  const ProposedCall* call_ = nullptr;
  std::vector<Lookup> lookups_;
  int cache_ref_ = LUA_NOREF;
  std::uint64_t cache_generation_ = 0;
  bool cache_stale_ = true;

  std::unordered_map<std::string, lua_Integer> token_slots_;
  std::string slot_key_;
  int source_tables_ref_ = LUA_NOREF;
  std::uint64_t source_tables_instance_ = 0;
  std::size_t source_tables_count_ = 0;
};

// call.designated (designation_view.cc): a C closure whose upvalue 1 is the
// ProvenanceView.
int DesignatedFn(lua_State* L);

}  // namespace taskledger::policy_internal
