// The four textual layouts of a state block, split into the text of each
// entry and the assembly of those texts into the block, so that pruning can
// drop entries and re-assemble without re-escaping every value.
// Stateless functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "taskledger/ledger/entry.h"
#include "taskledger/render/state_block.h"

namespace taskledger::render_internal {

// What is left of one category after pruning.
struct SectionPieces {
  std::vector<std::string> entries;  // EntryText of the kept entries, in key order
  size_t omitted = 0;
};
using BlockPieces = std::array<SectionPieces, kCategoryCount>;

// One entry as it appears in `format`, without the line break or separator
// that joins it to its neighbours.
std::string EntryText(StateBlockFormat format, std::string_view key, const Entry& entry,
                      bool include_provenance);

// The whole block. Sections with neither entries nor omissions are left out.
std::string AssembleBlock(StateBlockFormat format, uint64_t version, bool include_provenance,
                          const BlockPieces& pieces);

}  // namespace taskledger::render_internal
