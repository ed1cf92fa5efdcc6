// ProvenanceCache (internal/provenance_cache.h): an LRU of provenance
// carries keyed by conversation. Whatever leaves the cache is destroyed
// after the mutex is released: an index can be large.
#include "internal/provenance_cache.h"

#include <iterator>
#include <utility>

namespace taskledger::serve {

std::shared_ptr<ProvenanceCarry> ProvenanceCache::Take(const ConversationId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return nullptr;
  std::shared_ptr<ProvenanceCarry> carry = std::move(*it->second);
  lru_.erase(it->second);
  by_id_.erase(it);
  return carry;
}

void ProvenanceCache::Put(std::shared_ptr<ProvenanceCarry> carry) {
  if (carry == nullptr || carry->index == nullptr) return;
  Lru dropped;  // freed once the lock is released
  std::lock_guard<std::mutex> lock(mu_);
  if (capacity_ == 0) {
    dropped.push_back(std::move(carry));
    return;
  }
  if (auto it = by_id_.find(carry->id); it != by_id_.end()) {
    // Another request on the conversation finished first: keep the later.
    if ((*it->second)->head.version > carry->head.version) {
      dropped.push_back(std::move(carry));
      return;
    }
    dropped.splice(dropped.end(), lru_, it->second);
    by_id_.erase(it);
  }
  lru_.push_front(std::move(carry));
  by_id_[lru_.front()->id] = lru_.begin();
  while (lru_.size() > capacity_) {
    by_id_.erase(lru_.back()->id);
    dropped.splice(dropped.end(), lru_, std::prev(lru_.end()));
  }
}

std::size_t ProvenanceCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

}  // namespace taskledger::serve
