// PointerTable: the wildcard-free JSON pointers that one tool's mappings
// resolve from the root of an output (every {/abs} placeholder of their key,
// value and expiry templates, and every mapping path up to its first
// wildcard), merged into one tree of segments when the pack loads.
// ResolvedPointers resolves that tree once per output, each node with a single
// step from its parent, so twenty mappings that all name "{/order_id}" look it
// up once, and "/address/zip" and "/address/city" share the step to
// "/address". A PointerTable is immutable once its pack has loaded and
// thread-safe to share; a ResolvedPointers is thread-compatible, points into
// the output it last resolved and may be read only while that output lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "internal/json_pointer.h"

namespace taskledger::extract_internal {

class PointerTable {
 public:
  using Id = uint32_t;
  static constexpr Id kRoot = 0;  // the empty pointer: the output itself

  PointerTable();

  // The node reached by the first `count` segments of `p`, added (with the
  // nodes of its shorter prefixes) if no pointer interned before shares it.
  // REQUIRES: count <= p.segments().size() and none of them is a wildcard.
  Id Intern(const CompiledPointer& p, size_t count);
  size_t size() const { return nodes_.size(); }

 private:
  friend class ResolvedPointers;
  struct Node {
    Id parent = kRoot;
    size_t depth = 0;  // segments from the root
    PointerSegment segment;
  };
  std::vector<Node> nodes_;                            // parents before children
  std::map<std::pair<Id, std::string>, Id> children_;  // (parent, name) -> node
};

class ResolvedPointers {
 public:
  // Resolves every node of `table` in `root`, forgetting the last output.
  // Both must outlive every read until the next Resolve.
  void Resolve(const PointerTable& table, const nlohmann::json& root);

  // The node `id` of the table in the output, or nullptr if the output has
  // nothing there.
  const nlohmann::json* at(PointerTable::Id id) const { return nodes_[id]; }

  // Sets `chain` to the output's nodes from the root to node `id`.
  // REQUIRES: at(id) != nullptr.
  void ChainTo(PointerTable::Id id, std::vector<const nlohmann::json*>& chain) const;

 private:
  const PointerTable* table_ = nullptr;
  std::vector<const nlohmann::json*> nodes_;  // indexed like table_->nodes_
};

}  // namespace taskledger::extract_internal
