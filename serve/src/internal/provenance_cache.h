// Internal to serve/: the provenance indexes of the conversations requests
// used last, so that a request does not read and index a conversation's whole
// history again (Session::TakeProvenance, SessionOptions::provenance). Each
// is kept with the committed head it holds the sources of; a session adopts
// one only when the store's head is that very state (else, after a fleet
// peer wrote a turn, it rebuilds from the store). A request takes the index
// out, so two requests never share one (a second concurrent request on the
// same conversation rebuilds), and puts back what its session hands on.
// Bounded by a count of conversations, least recently used first out.
// Thread-safe: one mutex, held for O(1) work (nothing is built or freed
// under it).
#pragma once

#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <mutex>

#include "taskledger/base/conversation_id.h"
#include "taskledger/session/session.h"

namespace taskledger::serve {

class ProvenanceCache {
 public:
  // At most `capacity` conversations; 0 keeps none.
  explicit ProvenanceCache(std::size_t capacity) : capacity_(capacity) {}

  // The carry kept for `id`, taken out of the cache; null if none.
  std::shared_ptr<ProvenanceCarry> Take(const ConversationId& id);
  // Keeps `carry` (null: nothing) as the most recently used, replacing one
  // kept for the same conversation unless that one holds a later version;
  // drops the least recently used beyond the capacity.
  void Put(std::shared_ptr<ProvenanceCarry> carry);
  std::size_t size() const;

 private:
  using Lru = std::list<std::shared_ptr<ProvenanceCarry>>;  // most recent first
  std::size_t capacity_;
  mutable std::mutex mu_;
  Lru lru_;                                        // guarded by mu_
  std::map<ConversationId, Lru::iterator> by_id_;  // guarded by mu_
};

}  // namespace taskledger::serve
