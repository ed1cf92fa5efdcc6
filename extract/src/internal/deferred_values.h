// DeferredValues: the update values that BuildUpdate left for the caller to
// fill in, each a string, object or array of the output. They are filled in
// once the output is read no more, so that an output the extractor parsed and
// is about to destroy can give its nodes to the updates instead of having them
// copied: a node moves to the last update that takes it, unless it lies inside
// another node that moves; every other update gets a copy, made before any
// node moves. An output the caller owns is only copied from.
// Thread-compatible: one per extraction at a time (Extractor scratch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/ledger/entry.h"

namespace taskledger::extract_internal {

class DeferredValues {
 public:
  void Reserve(size_t updates) { items_.reserve(updates); }
  // Forgets every value (after an extraction that did not reach Fill).
  void Clear() { items_.clear(); }
  // Update `update_index` is to get `node`. Indices never decrease.
  void Add(const nlohmann::json* node, size_t update_index) {
    items_.push_back({node, update_index, false});
  }
  // Forgets the values of the updates from `update_index` on (they were dropped).
  void DropFrom(size_t update_index);
  // Fills in every value in `updates`, then forgets them. With `consume`, the
  // output the nodes belong to is a non-const object that only its destructor
  // will touch after this (a moved node leaves null behind).
  void Fill(std::vector<Update>& updates, bool consume);

 private:
  struct Item {
    const nlohmann::json* node;
    size_t update_index;
    bool copy;  // the update gets a copy, not the node itself
  };
  // Indexes items_ by node (slots_), marking every item but the last of each
  // node to copy.
  void IndexByNode();
  // The slot of `node` in slots_: the one holding it, or the empty one where
  // it would go.
  size_t SlotOf(const nlohmann::json* node) const;
  // Marks the items whose nodes lie inside `container` to copy.
  void MarkInside(const nlohmann::json& container);

  std::vector<Item> items_;      // in update order
  std::vector<uint32_t> slots_;  // open addressing: 1 + index into items_, 0 if empty
  int slot_bits_ = 0;            // slots_.size() == 1 << slot_bits_
};

}  // namespace taskledger::extract_internal
