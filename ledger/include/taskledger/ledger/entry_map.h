// EntryMap: the entries of one category of a LedgerState, as a persistent
// (immutable, structurally shared) ordered map from key to Entry.
//
// It is a path-copying AVL tree. Copying an EntryMap is O(1): both copies
// share every node. A write (Set, emplace, erase) copies only the O(log n)
// nodes on the path to the key, so versions of a conversation that differ in
// k entries share all but O(k log n) nodes and never copy an Entry they did
// not change. Each node also holds the smallest expiry of its subtree, so the
// entries that expired at a version are found without visiting the others
// (EraseExpired), and two maps that share nodes are compared by skipping the
// shared subtrees (ForEachDifference). Reads mirror std::map's const
// interface (find, lower_bound, iteration in key order yielding
// std::pair<const std::string, Entry>), so readers written for a std::map
// compile unchanged; operator[] returns a proxy that can only be assigned.
//
// Thread safety: nodes are immutable once built and reference-counted
// atomically, so different EntryMaps sharing nodes may be read, written and
// destroyed on different threads. One EntryMap object is thread-compatible
// (like a std::map).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "taskledger/ledger/entry.h"

namespace taskledger {

namespace entry_map_internal {

inline constexpr uint64_t kNoTurn = std::numeric_limits<uint64_t>::max();
inline constexpr int64_t kNoMs = std::numeric_limits<int64_t>::max();

// One key and its entry; shared by every node (of every version) that holds it.
struct Item {
  explicit Item(std::pair<const std::string, Entry> v) : kv(std::move(v)) {}
  mutable std::atomic<uint32_t> refs{1};
  std::pair<const std::string, Entry> kv;
};

struct Node {
  mutable std::atomic<uint32_t> refs{1};
  uint8_t height = 1;
  const Node* left = nullptr;
  const Node* right = nullptr;
  const Item* item = nullptr;
  uint64_t min_expires_turn = kNoTurn;  // over the subtree
  int64_t min_expires_ms = kNoMs;       // over the subtree
};

// Enough for any AVL tree that fits in memory (height <= 1.44 log2(n + 2)).
inline constexpr int kMaxHeight = 64;

}  // namespace entry_map_internal

class EntryMap {
  using Node = entry_map_internal::Node;

 public:
  using key_type = std::string;
  using mapped_type = Entry;
  using value_type = std::pair<const std::string, Entry>;

  // In-order iterator: a stack of the nodes still to visit. Never invalidated
  // by writes to any EntryMap (it pins nothing: keep the map it came from
  // alive and unchanged while using it, as for std::map).
  class const_iterator {
   public:
    using value_type = EntryMap::value_type;
    using reference = const value_type&;
    using pointer = const value_type*;
    using difference_type = std::ptrdiff_t;
    using iterator_category = std::forward_iterator_tag;

    const_iterator() = default;
    reference operator*() const { return stack_[depth_ - 1]->item->kv; }
    pointer operator->() const { return &stack_[depth_ - 1]->item->kv; }
    const_iterator& operator++();
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const const_iterator& o) const { return top() == o.top(); }

   private:
    friend class EntryMap;
    const Node* top() const { return depth_ == 0 ? nullptr : stack_[depth_ - 1]; }
    void PushLeft(const Node* n);
    std::array<const Node*, entry_map_internal::kMaxHeight> stack_{};
    int depth_ = 0;
  };
  using iterator = const_iterator;

  // operator[]'s result: `map[key] = entry` sets the entry.
  class Setter {
   public:
    Setter& operator=(Entry e) {
      map_.Set(key_, std::move(e));
      return *this;
    }

   private:
    friend class EntryMap;
    Setter(EntryMap& m, std::string k) : map_(m), key_(std::move(k)) {}
    EntryMap& map_;
    std::string key_;
  };

  EntryMap() = default;
  EntryMap(const EntryMap& o) noexcept;
  EntryMap(EntryMap&& o) noexcept : root_(o.root_), size_(o.size_) {
    o.root_ = nullptr;
    o.size_ = 0;
  }
  EntryMap& operator=(const EntryMap& o) noexcept;
  EntryMap& operator=(EntryMap&& o) noexcept;
  ~EntryMap();

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const_iterator begin() const;
  const_iterator end() const { return {}; }
  // First entry whose key is not less than `key`.
  const_iterator lower_bound(std::string_view key) const;
  const_iterator find(std::string_view key) const;
  // The entry under `key`, or nullptr. Allocates nothing.
  const Entry* get(std::string_view key) const;
  bool contains(std::string_view key) const { return get(key) != nullptr; }
  size_t count(std::string_view key) const { return contains(key) ? 1 : 0; }
  // REQUIRES: contains(key) (throws std::out_of_range otherwise, as std::map).
  const Entry& at(std::string_view key) const;

  // Inserts or replaces. O(log n) new nodes; other maps sharing nodes are unaffected.
  void Set(std::string_view key, Entry e);
  // Inserts if `key` is absent; true if it did.
  std::pair<const_iterator, bool> emplace(std::string key, Entry e);
  // Erases `key` if present; returns the number erased (0 or 1).
  size_t erase(std::string_view key);
  Setter operator[](std::string key) { return Setter(*this, std::move(key)); }

  // Erases every entry not live at (version, now_ms) (Entry::LiveAt); visits
  // only subtrees holding such an entry.
  void EraseExpired(uint64_t version, int64_t now_ms);
  // Smallest expires_at_turn / expires_at_ms of any entry (max if none).
  uint64_t min_expires_at_turn() const;
  int64_t min_expires_at_ms() const;

  // Calls f(key, a_entry_or_null, b_entry_or_null) in key order for every key
  // whose entry may differ between `a` and `b`: present in one only, or held
  // by different items. Subtrees the two maps share are skipped, unless an
  // entry in them expires by turn at or before `turn_bound` (then f also
  // sees those shared entries, with a == b, so it can judge liveness).
  template <typename F>
  static void ForEachDifference(const EntryMap& a, const EntryMap& b, uint64_t turn_bound, F&& f);

  // True if both maps are the very same tree (then equal, in O(1)).
  bool Identical(const EntryMap& o) const { return root_ == o.root_; }
  // Same keys and equal entries (O(1) when the two share their root).
  bool operator==(const EntryMap& o) const;

 private:
  const Node* root_ = nullptr;
  size_t size_ = 0;
};

template <typename F>
void EntryMap::ForEachDifference(const EntryMap& a, const EntryMap& b, uint64_t turn_bound, F&& f) {
  const_iterator ia = a.begin();
  const_iterator ib = b.begin();
  while (ia.top() != nullptr || ib.top() != nullptr) {
    const Node* na = ia.top();
    const Node* nb = ib.top();
    if (na == nb && na->min_expires_turn > turn_bound) {
      // The same node: it and its right subtree are the same in both maps.
      --ia.depth_;
      --ib.depth_;
      continue;
    }
    if (nb == nullptr || (na != nullptr && na->item->kv.first < nb->item->kv.first)) {
      f(na->item->kv.first, &na->item->kv.second, static_cast<const Entry*>(nullptr));
      ++ia;
    } else if (na == nullptr || nb->item->kv.first < na->item->kv.first) {
      f(nb->item->kv.first, static_cast<const Entry*>(nullptr), &nb->item->kv.second);
      ++ib;
    } else {
      if (na->item != nb->item || na->item->kv.second.expires_at_turn) {
        f(na->item->kv.first, &na->item->kv.second, &nb->item->kv.second);
      }
      ++ia;
      ++ib;
    }
  }
}

}  // namespace taskledger
