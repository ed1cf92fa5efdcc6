// Building a tool's PointerTable when its pack loads, and resolving it once
// per output (internal/pointer_table.h). PointerTable is immutable after
// loading; ResolvedPointers is per extraction.
#include "internal/pointer_table.h"

#include <algorithm>
#include <cassert>

#include "internal/compiled_rules.h"

namespace taskledger::extract_internal {

PointerTable::PointerTable() : nodes_(1) {}

PointerTable::Id PointerTable::Intern(const CompiledPointer& p, size_t count) {
  assert(count <= p.segments().size());
  Id id = kRoot;
  for (size_t i = 0; i < count; ++i) {
    const PointerSegment& s = p.segments()[i];
    assert(!s.wildcard);
    auto [it, added] = children_.try_emplace({id, s.name}, static_cast<Id>(nodes_.size()));
    if (added) nodes_.push_back(Node{id, i + 1, s});
    id = it->second;
  }
  return id;
}

void ResolvedPointers::Resolve(const PointerTable& table, const nlohmann::json& root) {
  table_ = &table;
  nodes_.resize(table.nodes_.size());
  nodes_[PointerTable::kRoot] = &root;
  // Parents come first, so one pass in order resolves every node.
  for (size_t i = 1; i < nodes_.size(); ++i) {
    const PointerTable::Node& n = table.nodes_[i];
    const nlohmann::json* parent = nodes_[n.parent];
    nodes_[i] = parent == nullptr ? nullptr : Step(*parent, n.segment);
  }
}

void ResolvedPointers::ChainTo(PointerTable::Id id,
                               std::vector<const nlohmann::json*>& chain) const {
  chain.resize(table_->nodes_[id].depth + 1);
  for (size_t i = chain.size(); i-- > 0; id = table_->nodes_[id].parent) chain[i] = nodes_[id];
}

void InternPointers(Mapping& m, PointerTable& table) {
  const auto& segments = m.path.segments();
  m.fixed_segments = static_cast<size_t>(
      std::find_if(segments.begin(), segments.end(), [](const auto& s) { return s.wildcard; }) -
      segments.begin());
  m.fixed_prefix = table.Intern(m.path, m.fixed_segments);
  // Templates a mapping does not use are empty and intern nothing.
  m.spec.key.InternPointers(table);
  m.spec.value.tmpl.InternPointers(table);
  m.spec.expire.from.InternPointers(table);
}

}  // namespace taskledger::extract_internal
