// The reverse value index of ledger.find() (see internal/value_index.h).
#include "internal/value_index.h"

#include "taskledger/pack/lua/lua_json.h"

namespace taskledger::policy_internal {

void ValueIndex::CountOne(Category c, const std::string& key, std::string value_key, int delta) {
  auto& m = keys_[static_cast<int>(c)];
  if (delta > 0) {
    m[std::move(value_key)].insert(key);
    return;
  }
  auto it = m.find(value_key);
  if (it == m.end()) return;
  it->second.erase(key);
  if (it->second.empty()) m.erase(it);
}

void ValueIndex::Count(Category c, const std::string& key, const Entry& e, int delta) {
  if (e.value.is_array()) {
    for (const auto& x : e.value) {
      if (auto k = lua::JsonScalarKey(x)) CountOne(c, key, std::move(*k), delta);
    }
  } else if (auto k = lua::JsonScalarKey(e.value)) {
    CountOne(c, key, std::move(*k), delta);
  }
}

void ValueIndex::Follow(const LedgerState& state) {
  if (!valid_) {
    for (auto& m : keys_) m.clear();
    for (Category c : kAllCategories) {
      for (const auto& [key, e] : state.of(c)) Count(c, key, e, +1);
    }
    indexed_ = state;
    valid_ = true;
    ++builds_;
    return;
  }
  for (Category c : kAllCategories) {
    if (indexed_.of(c).Identical(state.of(c))) continue;
    // turn_bound 0: shared subtrees are always skipped (liveness is not indexed).
    EntryMap::ForEachDifference(indexed_.of(c), state.of(c), 0,
                                [&](const std::string& key, const Entry* a, const Entry* b) {
                                  if (a == b) return;
                                  if (a != nullptr) Count(c, key, *a, -1);
                                  if (b != nullptr) Count(c, key, *b, +1);
                                });
  }
  indexed_ = state;
}

const std::set<std::string>* ValueIndex::Lookup(Category c, const std::string& value_key) const {
  const auto& m = keys_[static_cast<int>(c)];
  auto it = m.find(value_key);
  return it == m.end() ? nullptr : &it->second;
}

}  // namespace taskledger::policy_internal
