// CallRecord (one tool call as the ledger remembers it) and CallList:
// every tool call a conversation recorded, in order, as a
// persistent (immutable, structurally shared) list.
//
// A CallList is a pointer to its newest record; each record points to the one
// before it. Copying is O(1) and push_back is O(1) and copies nothing already
// recorded, so the versions of a conversation share all the calls they have
// in common. Reads newest-first (ForEachNewestFirst, back) allocate nothing;
// forward iteration (begin/end, for codecs and audits that need the recorded
// order) gathers the records once, O(n) like the walk it serves; operator[]
// is O(n - i), for tests.
//
// Thread safety: records are immutable and reference-counted atomically, so
// CallLists sharing records may be used on different threads; one CallList
// object is thread-compatible.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/base/tool_call.h"

namespace taskledger {

// A tool call as the ledger remembers it, for rules that count calls: the
// call itself (the one ToolCall shape it had from the adapter on), the turn
// that recorded it, its class as the gate computed it once, and its outcome.
struct CallRecord {
  uint64_t turn = 0;
  ToolCall call;
  bool writes = false;  // the tool's class was not read-only (PolicyDecision::tool_class)
  std::string outcome;  // "ok", "error" (the tool refused), "denied" (the gate refused)
  bool operator==(const CallRecord&) const = default;
};

class CallList {
  struct Node {
    mutable std::atomic<uint32_t> refs{1};
    const Node* prev = nullptr;
    size_t count = 0;  // records up to and including this one
    CallRecord record;
  };

 public:
  // Forward iterator over a gathered snapshot of the list.
  class const_iterator {
   public:
    using value_type = CallRecord;
    using reference = const CallRecord&;
    using pointer = const CallRecord*;
    using difference_type = std::ptrdiff_t;
    using iterator_category = std::forward_iterator_tag;
    const_iterator() = default;
    reference operator*() const { return (*nodes_)[i_]->record; }
    pointer operator->() const { return &(*nodes_)[i_]->record; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const const_iterator& o) const { return i_ == o.i_; }

   private:
    friend class CallList;
    std::shared_ptr<const std::vector<const Node*>> nodes_;
    size_t i_ = 0;
  };

  CallList() = default;
  CallList(std::initializer_list<CallRecord> calls);
  explicit CallList(const std::vector<CallRecord>& calls);
  CallList(const CallList& o) noexcept : last_(Ref(o.last_)) {}
  CallList(CallList&& o) noexcept : last_(o.last_) { o.last_ = nullptr; }
  CallList& operator=(const CallList& o) noexcept;
  CallList& operator=(CallList&& o) noexcept;
  ~CallList() { Unref(last_); }

  size_t size() const { return last_ ? last_->count : 0; }
  bool empty() const { return last_ == nullptr; }
  void push_back(CallRecord c);
  // REQUIRES: !empty().
  const CallRecord& back() const { return last_->record; }
  // REQUIRES: i < size(). O(size() - i).
  const CallRecord& operator[](size_t i) const;
  const_iterator begin() const;
  const_iterator end() const;
  // Calls f(record) from the newest to the oldest; stops early if f returns false.
  template <typename F>
  void ForEachNewestFirst(F&& f) const {
    for (const Node* n = last_; n != nullptr; n = n->prev) {
      if (!f(n->record)) return;
    }
  }
  std::vector<CallRecord> ToVector() const;

  bool operator==(const CallList& o) const;

 private:
  static const Node* Ref(const Node* n) {
    if (n) n->refs.fetch_add(1, std::memory_order_relaxed);
    return n;
  }
  static void Unref(const Node* n);

  const Node* last_ = nullptr;
};

}  // namespace taskledger
