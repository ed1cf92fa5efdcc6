// ValueIndex: the reverse index behind ledger.find(): per category, from a
// scalar value (typed, as JsonScalarKey writes it) to the sorted keys of the
// entries holding it (or holding an array with it as an element).
//
// It is derived from one LedgerState and kept up to date by diffing: built
// whole on first use, then moved to a later (or other) state by visiting only
// the entries the two states do not share (EntryMap::ForEachDifference skips
// shared subtrees), so following a conversation turn by turn costs
// O(changes * log n) per turn, not O(n). Liveness is not part of the index
// (every present entry is indexed): the caller checks each key it gets back
// against the state it reads, so wall-clock expiry never invalidates it.
// Not thread-safe: belongs to one LedgerView.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>

#include "taskledger/ledger/state.h"

namespace taskledger::policy_internal {

class ValueIndex {
 public:
  // Makes the index describe `state` (a no-op if it already does).
  void Follow(const LedgerState& state);
  // Keys of category `c` whose entry holds the scalar with key `value_key`;
  // nullptr if none.
  const std::set<std::string>* Lookup(Category c, const std::string& value_key) const;
  uint64_t builds() const { return builds_; }

 private:
  void Count(Category c, const std::string& key, const Entry& e, int delta);
  void CountOne(Category c, const std::string& key, std::string value_key, int delta);

  bool valid_ = false;
  LedgerState indexed_;  // the state the index describes (shares its nodes)
  std::array<std::unordered_map<std::string, std::set<std::string>>, kCategoryCount> keys_;
  uint64_t builds_ = 0;
};

}  // namespace taskledger::policy_internal
