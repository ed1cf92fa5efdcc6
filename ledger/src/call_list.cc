// CallList: the persistent list of recorded calls (see call_list.h). Records
// are never changed once linked, so only their counts are shared state.
#include "taskledger/ledger/call_list.h"

namespace taskledger {

CallList::CallList(std::initializer_list<CallRecord> calls) {
  for (const CallRecord& c : calls) push_back(c);
}

CallList::CallList(const std::vector<CallRecord>& calls) {
  for (const CallRecord& c : calls) push_back(c);
}

CallList& CallList::operator=(const CallList& o) noexcept {
  if (this == &o) return *this;
  const Node* old = last_;
  last_ = Ref(o.last_);
  Unref(old);
  return *this;
}

CallList& CallList::operator=(CallList&& o) noexcept {
  if (this != &o) {
    Unref(last_);
    last_ = o.last_;
    o.last_ = nullptr;
  }
  return *this;
}

void CallList::Unref(const Node* n) {
  // Iterative: a long conversation's list is far deeper than the stack.
  while (n != nullptr && n->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    const Node* prev = n->prev;
    delete n;
    n = prev;
  }
}

void CallList::push_back(CallRecord c) {
  auto* n = new Node;
  n->prev = last_;  // takes over this list's reference
  n->count = size() + 1;
  n->record = std::move(c);
  last_ = n;
}

const CallRecord& CallList::operator[](size_t i) const {
  const Node* n = last_;
  for (size_t k = size() - 1; k > i; --k) n = n->prev;
  return n->record;
}

CallList::const_iterator CallList::begin() const {
  auto nodes = std::make_shared<std::vector<const Node*>>(size());
  size_t i = size();
  for (const Node* n = last_; n != nullptr; n = n->prev) (*nodes)[--i] = n;
  const_iterator it;
  it.nodes_ = std::move(nodes);
  return it;
}

CallList::const_iterator CallList::end() const {
  const_iterator it;
  it.i_ = size();
  return it;
}

std::vector<CallRecord> CallList::ToVector() const {
  std::vector<CallRecord> out;
  out.reserve(size());
  for (const CallRecord& c : *this) out.push_back(c);
  return out;
}

bool CallList::operator==(const CallList& o) const {
  if (size() != o.size()) return false;
  for (const Node *a = last_, *b = o.last_; a != b; a = a->prev, b = b->prev) {
    if (!(a->record == b->record)) return false;
  }
  return true;
}

}  // namespace taskledger
