// LedgerState (the state of one conversation at one version), TurnRecord (one
// committed turn: the delta from version N-1 to N) and the pure functions that
// apply a turn and diff two versions.
//
// Version N is the state after N committed turns; version 0 is empty. A turn
// record carries everything the turn did: the entry updates, the tool calls
// made (so rules can count them), the policy decisions taken, any extraction
// errors and the provenance sources (user messages, tool outputs), so that an auditor reading
// version N sees exactly what the agent saw. All functions here are pure and deterministic
// (wall-clock expiry is judged by the turn's own committed_at_ms), so any version can be rebuilt
// exactly from a snapshot plus the turns after it. Thread-compatible.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "taskledger/base/status.h"
#include "taskledger/ledger/call_list.h"
#include "taskledger/ledger/cbor_value.h"
#include "taskledger/ledger/decision_record.h"
#include "taskledger/ledger/entry.h"
#include "taskledger/ledger/entry_map.h"
#include "taskledger/ledger/extraction_error.h"

namespace taskledger {

// A user message or tool output as the conversation's provenance index was
// given it (issue #23): what a reopened session indexes again, so that its
// provenance answers are the ones the session that staged it gave. A
// rule-only record: it is no entry, never part of a LedgerState and never
// rendered. One the index refused (a hostile output over its limits) is kept
// as the refusal alone, so a rebuilt index fails closed with the same error
// and the store never holds the oversized text. docs/design.md, "Provenance
// across sessions".
struct SourceRecord {
  enum class Kind : uint8_t { kUserMessage = 0, kToolOutput = 1 };
  Kind kind = Kind::kToolOutput;
  // The turn the index was given it in: the turn being built then, which a
  // Rebase may have moved the record past.
  uint64_t turn = 0;
  std::string tool;     // kToolOutput
  std::string call_id;  // kToolOutput
  // kUserMessage: the text (a JSON string); kToolOutput: the output. Kept
  // encoded (CborValue: one shared buffer, about a fifth of a parsed copy's
  // memory), since it is only read again to rebuild an index or show the
  // turn. Null when refused.
  CborValue content;
  // Non-empty: the index refused this source with this error (LimitExceeded).
  std::string refused;
  bool operator==(const SourceRecord&) const = default;
};

struct TurnRecord {
  uint64_t turn = 0;            // the version this turn produces
  int64_t committed_at_ms = 0;  // wall clock when the turn was committed
  std::vector<Update> updates;
  std::vector<CallRecord> calls;
  std::vector<DecisionRecord> decisions;  // one per policy check, in order
  std::vector<ExtractionError> errors;    // extraction errors, in the order staged
  std::vector<SourceRecord> sources;      // provenance sources, in the order indexed
  bool operator==(const TurnRecord&) const = default;
};

// A version's state is a value made of persistent parts (EntryMap, CallList):
// copying it is O(1), and two versions share every entry and call record one
// did not change, so keeping many versions costs memory in proportion to what
// changed between them.
struct LedgerState {
  uint64_t version = 0;
  std::array<EntryMap, kCategoryCount> entries;
  CallList calls;  // every call ever recorded, in order

  const EntryMap& of(Category c) const { return entries[static_cast<int>(c)]; }
  EntryMap& of(Category c) { return entries[static_cast<int>(c)]; }
  // The entry if present and live at (version, now_ms), else nullptr.
  const Entry* FindLive(Category c, std::string_view key, int64_t now_ms) const;
  size_t size() const;
  bool operator==(const LedgerState&) const = default;
};

// Applies one update to `state` as part of turn `turn` (at `now_ms`).
// Rules: a set overwrites (history keeps the old value in its turn record),
// except that a claim (verified=false) never overwrites verified evidence with a
// different value: the evidence stays and the conflict is recorded as the
// condition "conflict.<category>.<key>" = {"claimed", "verified", "claimed_by"};
// a claim equal to the evidence changes nothing.
// Remove erases; expire makes the entry not live from this version on.
// Returns InvalidArgument for an empty key and leaves `state` unchanged.
Status ApplyUpdate(LedgerState& state, const Update& u, uint64_t turn, int64_t now_ms);

// Cost: O(log n) in the entries of the category (plus the conflict entry).
// Applies a whole turn atomically: either every update applies and
// state.version becomes turn.turn, or `state` is left untouched.
// REQUIRES: turn.turn == state.version + 1 (else FailedPrecondition).
// Entries whose expiry has passed at turn.turn / turn.committed_at_ms are
// dropped from the state (they remain in the turn records).
// Cost: O(k log n) for k updates and expired entries; nothing is copied.
Status ApplyTurn(LedgerState& state, const TurnRecord& turn);

// The last step of ApplyTurn, for a caller that already applied the turn's
// updates and calls to `state` (the Ledger's working state): makes
// turn.turn the version and drops the entries expired at turn.turn /
// turn.committed_at_ms. Cost: O(k log n) for k expired entries.
void SealTurn(LedgerState& state, const TurnRecord& turn);

struct EntryChange {
  Category category;
  std::string key;
  std::optional<Entry> before;  // absent for "added"
  std::optional<Entry> after;   // absent for "removed"
};

struct StateDiff {
  std::vector<EntryChange> added, changed, removed;
  bool empty() const { return added.empty() && changed.empty() && removed.empty(); }
};

// Diffs the live entries of two states, judged at now_ms. Ordered by category then key.
// Entries the two states share (an unchanged subtree of an EntryMap) are
// skipped without being visited, so diffing two adjacent versions costs
// O(changes * log n).
StateDiff Diff(const LedgerState& from, const LedgerState& to, int64_t now_ms);

}  // namespace taskledger
