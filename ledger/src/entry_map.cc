// EntryMap: the path-copying AVL tree behind LedgerState (see entry_map.h).
// Reference convention inside this file: a function taking or returning a
// `const Node*` / `const Item*` named "owned" transfers one reference;
// "borrowed" pointers are only read. Nodes are never changed after MakeNode
// returns them, so sharing them across threads needs only the atomic counts.
#include "taskledger/ledger/entry_map.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace taskledger {

using entry_map_internal::Item;
using entry_map_internal::kNoMs;
using entry_map_internal::kNoTurn;
using entry_map_internal::Node;

namespace {

const Node* Ref(const Node* n) {
  if (n) n->refs.fetch_add(1, std::memory_order_relaxed);
  return n;
}
const Item* Ref(const Item* i) {
  i->refs.fetch_add(1, std::memory_order_relaxed);
  return i;
}

void Unref(const Item* i) {
  if (i->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete i;
}

void Unref(const Node* n) {
  while (n != nullptr && n->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    const Node* right = n->right;
    Unref(n->left);
    Unref(n->item);
    delete n;
    n = right;  // the right spine iteratively: bounded recursion either way
  }
}

int H(const Node* n) { return n ? n->height : 0; }

// Sets the height and subtree minima of `n` from its item and children.
void Refresh(Node* n) {
  const Entry& e = n->item->kv.second;
  n->height = static_cast<uint8_t>(1 + std::max(H(n->left), H(n->right)));
  n->min_expires_turn = e.expires_at_turn.value_or(kNoTurn);
  n->min_expires_ms = e.expires_at_ms.value_or(kNoMs);
  for (const Node* c : {n->left, n->right}) {
    if (c == nullptr) continue;
    n->min_expires_turn = std::min(n->min_expires_turn, c->min_expires_turn);
    n->min_expires_ms = std::min(n->min_expires_ms, c->min_expires_ms);
  }
}

// Takes the three references.
const Node* MakeNode(const Item* item, const Node* left, const Node* right) {
  auto* n = new Node;
  n->item = item;
  n->left = left;
  n->right = right;
  Refresh(n);
  return n;
}

// Joins owned `left` and `right` (heights differing by at most 2) under owned `item`.
const Node* Balance(const Item* item, const Node* left, const Node* right) {
  if (H(left) > H(right) + 1) {
    const Node* ll = left->left;
    const Node* lr = left->right;
    const Node* out;
    if (H(ll) >= H(lr)) {
      out = MakeNode(Ref(left->item), Ref(ll), MakeNode(item, Ref(lr), right));
    } else {
      out = MakeNode(Ref(lr->item), MakeNode(Ref(left->item), Ref(ll), Ref(lr->left)),
                     MakeNode(item, Ref(lr->right), right));
    }
    Unref(left);
    return out;
  }
  if (H(right) > H(left) + 1) {
    const Node* rl = right->left;
    const Node* rr = right->right;
    const Node* out;
    if (H(rr) >= H(rl)) {
      out = MakeNode(Ref(right->item), MakeNode(item, left, Ref(rl)), Ref(rr));
    } else {
      out = MakeNode(Ref(rl->item), MakeNode(item, left, Ref(rl->left)),
                     MakeNode(Ref(right->item), Ref(rl->right), Ref(rr)));
    }
    Unref(right);
    return out;
  }
  return MakeNode(item, left, right);
}

int Compare(std::string_view a, std::string_view b) { return a.compare(b); }

// True when the one reference to `n` is the caller's.
bool Sole(const Node* n) { return n->refs.load(std::memory_order_acquire) == 1; }

// Returns the owned new root of borrowed `t` with owned `item` set; `added`
// tells whether the key was new. `sole`: `t` and every node above it have
// one reference, the map's own (no other version, snapshot or thread can
// reach `t`), so `t` is updated in place instead of copied: within a turn,
// the path the first update copied is not copied again by the next ones.
const Node* Insert(const Node* t, const Item* item, bool& added, bool sole) {
  if (t == nullptr) {
    added = true;
    return MakeNode(item, nullptr, nullptr);
  }
  sole = sole && Sole(t);
  int c = Compare(item->kv.first, t->item->kv.first);
  if (c == 0) {
    added = false;
    if (!sole) return MakeNode(item, Ref(t->left), Ref(t->right));
    auto* m = const_cast<Node*>(t);
    Unref(m->item);
    m->item = item;
    Refresh(m);
    return Ref(m);
  }
  if (!sole) {
    if (c < 0) return Balance(Ref(t->item), Insert(t->left, item, added, false), Ref(t->right));
    return Balance(Ref(t->item), Ref(t->left), Insert(t->right, item, added, false));
  }
  auto* m = const_cast<Node*>(t);
  const Node*& child = c < 0 ? m->left : m->right;
  const Node* updated = Insert(child, item, added, true);
  Unref(child);
  child = updated;
  if (std::abs(H(m->left) - H(m->right)) <= 1) {
    Refresh(m);
    return Ref(m);
  }
  // A rotation: built from new nodes, as on a shared path; the caller's
  // reference to `m`, the last one, then frees it.
  return Balance(Ref(m->item), Ref(m->left), Ref(m->right));
}

// Owned root of borrowed `t` without its smallest item, which goes to `*min` (owned).
const Node* RemoveMin(const Node* t, const Item** min) {
  if (t->left == nullptr) {
    *min = Ref(t->item);
    return Ref(t->right);
  }
  return Balance(Ref(t->item), RemoveMin(t->left, min), Ref(t->right));
}

// REQUIRES: `key` is in borrowed `t`. Returns the owned new root.
const Node* Remove(const Node* t, std::string_view key) {
  int c = Compare(key, t->item->kv.first);
  if (c < 0) return Balance(Ref(t->item), Remove(t->left, key), Ref(t->right));
  if (c > 0) return Balance(Ref(t->item), Ref(t->left), Remove(t->right, key));
  if (t->left == nullptr) return Ref(t->right);
  if (t->right == nullptr) return Ref(t->left);
  const Item* min = nullptr;
  const Node* right = RemoveMin(t->right, &min);
  return Balance(min, Ref(t->left), right);
}

void CollectExpired(const Node* t, uint64_t version, int64_t now_ms,
                    std::vector<std::string>& out) {
  if (t == nullptr || (t->min_expires_turn > version && t->min_expires_ms > now_ms)) return;
  CollectExpired(t->left, version, now_ms, out);
  if (!t->item->kv.second.LiveAt(version, now_ms)) out.push_back(t->item->kv.first);
  CollectExpired(t->right, version, now_ms, out);
}

}  // namespace

void EntryMap::const_iterator::PushLeft(const Node* n) {
  for (; n != nullptr; n = n->left) stack_[depth_++] = n;
}

EntryMap::const_iterator& EntryMap::const_iterator::operator++() {
  const Node* n = stack_[--depth_];
  PushLeft(n->right);
  return *this;
}

EntryMap::EntryMap(const EntryMap& o) noexcept : root_(Ref(o.root_)), size_(o.size_) {}

EntryMap& EntryMap::operator=(const EntryMap& o) noexcept {
  if (this == &o) return *this;
  const Node* old = root_;
  root_ = Ref(o.root_);
  size_ = o.size_;
  Unref(old);
  return *this;
}

EntryMap& EntryMap::operator=(EntryMap&& o) noexcept {
  if (this != &o) {
    Unref(root_);
    root_ = o.root_;
    size_ = o.size_;
    o.root_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

EntryMap::~EntryMap() { Unref(root_); }

EntryMap::const_iterator EntryMap::begin() const {
  const_iterator it;
  it.PushLeft(root_);
  return it;
}

EntryMap::const_iterator EntryMap::lower_bound(std::string_view key) const {
  const_iterator it;
  for (const Node* n = root_; n != nullptr;) {
    if (Compare(n->item->kv.first, key) >= 0) {
      it.stack_[it.depth_++] = n;
      n = n->left;
    } else {
      n = n->right;
    }
  }
  return it;
}

EntryMap::const_iterator EntryMap::find(std::string_view key) const {
  const_iterator it = lower_bound(key);
  if (it.top() == nullptr || it->first != key) return end();
  return it;
}

const Entry* EntryMap::get(std::string_view key) const {
  for (const Node* n = root_; n != nullptr;) {
    int c = Compare(key, n->item->kv.first);
    if (c == 0) return &n->item->kv.second;
    n = c < 0 ? n->left : n->right;
  }
  return nullptr;
}

const Entry& EntryMap::at(std::string_view key) const {
  const Entry* e = get(key);
  if (e == nullptr) throw std::out_of_range("EntryMap::at: no key " + std::string(key));
  return *e;
}

void EntryMap::Set(std::string_view key, Entry e) {
  const Item* item = new Item({std::string(key), std::move(e)});
  bool added = false;
  const Node* next = Insert(root_, item, added, true);
  Unref(root_);
  root_ = next;
  if (added) ++size_;
}

std::pair<EntryMap::const_iterator, bool> EntryMap::emplace(std::string key, Entry e) {
  if (contains(key)) return {find(key), false};
  const Item* item = new Item({std::move(key), std::move(e)});
  bool added = false;
  const Node* next = Insert(root_, item, added, true);
  Unref(root_);
  root_ = next;
  ++size_;
  return {find(item->kv.first), true};
}

size_t EntryMap::erase(std::string_view key) {
  if (!contains(key)) return 0;
  const Node* next = Remove(root_, key);
  Unref(root_);
  root_ = next;
  --size_;
  return 1;
}

void EntryMap::EraseExpired(uint64_t version, int64_t now_ms) {
  std::vector<std::string> expired;
  CollectExpired(root_, version, now_ms, expired);
  for (const std::string& k : expired) erase(k);
}

uint64_t EntryMap::min_expires_at_turn() const { return root_ ? root_->min_expires_turn : kNoTurn; }

int64_t EntryMap::min_expires_at_ms() const { return root_ ? root_->min_expires_ms : kNoMs; }

bool EntryMap::operator==(const EntryMap& o) const {
  if (root_ == o.root_) return true;
  if (size_ != o.size_) return false;
  for (auto a = begin(), b = o.begin(); a != end(); ++a, ++b) {
    if (a->first != b->first || !(a->second == b->second)) return false;
  }
  return true;
}

}  // namespace taskledger
