// RenderStateBlock: selects the live entries, escapes each once, and prunes
// to the character budget in importance order (see state_block.h).
#include "taskledger/render/state_block.h"

#include <algorithm>
#include <deque>
#include <exception>
#include <tuple>
#include <vector>

#include "internal/block_layout.h"
#include "internal/value_text.h"

namespace taskledger {
namespace {

using render_internal::BlockPieces;

struct RenderItem {
  int category;
  const std::string* key;
  const Entry* entry;
  std::string text;  // EntryText
  size_t chars;      // CountChars(text)
};

// Lower sorts first, i.e. is dropped first.
bool DropsBefore(const RenderItem& a, const RenderItem& b) {
  const Provenance& pa = a.entry->provenance;
  const Provenance& pb = b.entry->provenance;
  return std::tie(a.category, pa.turn, pa.verified, *a.key) <
         std::tie(b.category, pb.turn, pb.verified, *b.key);
}

std::string Assemble(const StateBlockOptions& options, uint64_t version,
                     const std::vector<RenderItem>& items, const std::vector<bool>& dropped) {
  BlockPieces pieces;
  for (size_t i = 0; i < items.size(); ++i) {
    auto& section = pieces[items[i].category];
    if (dropped[i]) {
      ++section.omitted;
    } else {
      section.entries.push_back(items[i].text);
    }
  }
  return render_internal::AssembleBlock(options.format, version, options.include_provenance,
                                        pieces);
}

Result<StateBlock> Render(const LedgerState& state, int64_t now_ms,
                          const StateBlockOptions& options) {
  std::vector<RenderItem> items;  // category order, then key order
  std::deque<Entry> redacted;     // copies with marked fields replaced (stable addresses)
  size_t hidden = 0;
  const RenderVisibility* vis =
      options.visibility != nullptr && !options.visibility->empty() ? options.visibility : nullptr;
  for (int c = 0; c < kCategoryCount; ++c) {
    for (const auto& [key, live] : state.entries[c]) {
      if (!live.LiveAt(state.version, now_ms)) continue;
      if (vis != nullptr && vis->Hides(key)) {
        ++hidden;
        continue;
      }
      const Entry* shown = &live;
      if (vis != nullptr && vis->Redacts(key)) {
        nlohmann::json value = live.value;
        if (vis->Redact(key, value) && value != live.value) {
          Entry& copy = redacted.emplace_back(live);
          copy.value = std::move(value);
          shown = &copy;
        }
      }
      const Entry& entry = *shown;
      std::string text =
          render_internal::EntryText(options.format, key, entry, options.include_provenance);
      const size_t chars = render_internal::CountChars(text);
      items.push_back({c, &key, &entry, std::move(text), chars});
    }
  }
  std::vector<size_t> drop_order(items.size());
  for (size_t i = 0; i < drop_order.size(); ++i) drop_order[i] = i;
  std::stable_sort(drop_order.begin(), drop_order.end(),
                   [&](size_t a, size_t b) { return DropsBefore(items[a], items[b]); });

  std::vector<bool> dropped(items.size(), false);
  std::string text = Assemble(options, state.version, items, dropped);
  size_t chars = render_internal::CountChars(text);
  size_t next = 0;
  while (options.max_chars > 0 && chars > options.max_chars) {
    if (next == drop_order.size()) {
      return Status::LimitExceeded("state block needs " + std::to_string(chars) +
                                   " characters with every entry omitted; budget is " +
                                   std::to_string(options.max_chars));
    }
    // Drop just enough entries to cover the excess, counting each with its
    // separator. An entry frees at most that much (a new omission note only
    // adds text), so this never drops more than the fewest that could fit;
    // the loop re-checks the real length and continues if a note outgrew it.
    const size_t excess = chars - options.max_chars;
    size_t freed = 0;
    while (freed < excess && next < drop_order.size()) {
      const size_t i = drop_order[next++];
      dropped[i] = true;
      freed += items[i].chars + 1;
    }
    text = Assemble(options, state.version, items, dropped);
    chars = render_internal::CountChars(text);
  }

  StateBlock block;
  block.text = std::move(text);
  block.chars = chars;
  block.approx_tokens = ApproxTokens(chars);
  block.hidden = hidden;
  block.redacted = redacted.size();
  for (size_t i = 0; i < items.size(); ++i) {
    if (dropped[i]) ++block.omitted[items[i].category];
  }
  return block;
}

}  // namespace

size_t ApproxTokens(size_t chars) { return (chars + 3) / 4; }

Result<StateBlock> RenderStateBlock(const LedgerState& state, int64_t now_ms,
                                    const StateBlockOptions& options) {
  // Escaping does not throw on any input, but allocation can: keep the
  // no-exceptions-across-the-API promise.
  try {
    return Render(state, now_ms, options);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("rendering the state block failed: ") + e.what());
  }
}

}  // namespace taskledger
