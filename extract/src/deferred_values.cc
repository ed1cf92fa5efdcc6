// Filling in deferred update values (internal/deferred_values.h): moves where
// no other update needs the node, copies otherwise. The items are indexed by
// node in a small hash table, so an extraction costs time linear in its
// values (and in the size of the containers among them).
#include "internal/deferred_values.h"

#include <bit>
#include <utility>

namespace taskledger::extract_internal {

using nlohmann::json;

// Items (24 bytes each) a DeferredValues keeps room for between extractions.
constexpr size_t kKeptCapacity = 1024;

void DeferredValues::DropFrom(size_t update_index) {
  while (!items_.empty() && items_.back().update_index >= update_index) items_.pop_back();
}

size_t DeferredValues::SlotOf(const json* node) const {
  // JSON values take 16 bytes or more and never overlap: the low four bits
  // of their addresses tell none apart.
  const uint64_t key = reinterpret_cast<uintptr_t>(node) >> 4;
  const size_t mask = slots_.size() - 1;
  for (size_t s = (key * 0x9E3779B97F4A7C15ULL) >> (64 - slot_bits_);; s = (s + 1) & mask) {
    if (slots_[s] == 0 || items_[slots_[s] - 1].node == node) return s;
  }
}

void DeferredValues::IndexByNode() {
  // At most half full, so probes stay short and always find an empty slot.
  slot_bits_ = static_cast<int>(std::bit_width(items_.size() * 2));
  slots_.assign(size_t{1} << slot_bits_, 0);
  for (size_t i = 0; i < items_.size(); ++i) {
    uint32_t& slot = slots_[SlotOf(items_[i].node)];
    if (slot != 0) items_[slot - 1].copy = true;  // a later update takes this node too
    slot = static_cast<uint32_t>(i + 1);
  }
}

void DeferredValues::MarkInside(const json& container) {
  // Recursion as deep as the output nests, which the depth limit bounds.
  for (const json& child : container) {
    // Only the last item of a node can be unmarked; earlier ones copy already.
    if (const uint32_t slot = slots_[SlotOf(&child)]; slot != 0) items_[slot - 1].copy = true;
    if (child.is_structured()) MarkInside(child);
  }
}

void DeferredValues::Fill(std::vector<Update>& updates, bool consume) {
  if (items_.empty()) return;
  if (consume) {
    IndexByNode();
    // A container moves whole, so what lies inside it is copied first.
    for (const Item& item : items_) {
      if (!item.copy && item.node->is_structured()) MarkInside(*item.node);
    }
  }
  for (Item& item : items_) {
    if (!consume) item.copy = true;
    if (item.copy) updates[item.update_index].value = *item.node;
  }
  for (const Item& item : items_) {
    // Allowed by the contract: the node belongs to a non-const object.
    if (!item.copy) updates[item.update_index].value = std::move(*const_cast<json*>(item.node));
  }
  items_.clear();
  // Kept for the next extraction, unless an unusually large one grew them.
  if (items_.capacity() > kKeptCapacity) {
    items_ = {};
    slots_ = {};
  }
}

}  // namespace taskledger::extract_internal
