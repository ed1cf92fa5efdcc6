// The task-state block: a LedgerState rendered as text for an agent's system
// prompt, in one of four forms (plain lines, Markdown, XML-tagged, JSON).
//
// Only entries live at (state.version, now_ms) appear. Order is fixed:
// categories as facts, identifiers, constraints, conditions; keys in byte
// order; so equal states render to identical bytes. Keys and values come from
// tools and users and are untrusted: whatever they contain, they cannot add a
// line, heading, list item, tag or JSON member to the block (see
// docs/render.md for the escaping scheme of each form). A character budget
// drops the least important entries first and says how many it left out.
// Pure functions of their arguments; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "taskledger/base/status.h"
#include "taskledger/ledger/state.h"
#include "taskledger/render/visibility.h"

namespace taskledger {

enum class StateBlockFormat {
  kPlain,     // "Current Task State:" / "Facts:" / "- key: value"
  kMarkdown,  // "## Current Task State" / "### Facts" / "- `key`: value"
  kXml,       // <task_state><facts><entry key="key">value</entry></facts></task_state>
  kJson,      // {"task_state":{"version":N,"facts":{"key":value},...}}
};

struct StateBlockOptions {
  StateBlockFormat format = StateBlockFormat::kPlain;
  // Adds each entry's turn, source kind, source id, verified/claimed and rule
  // id: for audits and debugging, at the cost of about 40 characters an entry.
  bool include_provenance = false;
  // Upper bound on the block's length in Unicode characters; 0 means none.
  // Over budget, entries are dropped in this order until the block fits:
  // facts, then identifiers, then constraints, then conditions; within a
  // category the oldest turn first, claims before verified evidence, then by
  // key. Each section that lost entries says so: "(12 older facts omitted)".
  size_t max_chars = 0;
  // What the pack keeps out of the prompt (pack.json "render"): entries it
  // marks internal are left out without a trace in the block (they are not
  // "omitted"), and marked fields of values read "[redacted]". Not owned;
  // must outlive the call. Null: everything live renders.
  const RenderVisibility* visibility = nullptr;
};

struct StateBlock {
  std::string text;  // no trailing newline
  size_t chars = 0;  // length of `text` in Unicode characters
  // chars / 4 rounded up: the usual rule of thumb for English text with
  // GPT- and Claude-family tokenizers. An estimate, not a tokenizer count.
  size_t approx_tokens = 0;
  std::array<size_t, kCategoryCount> omitted{};  // per category, by budget
  size_t hidden = 0;    // live entries left out as internal (never in `text`)
  size_t redacted = 0;  // entries rendered with redacted fields
  size_t total_omitted() const { return omitted[0] + omitted[1] + omitted[2] + omitted[3]; }
};

// Renders the live entries of `state` at wall-clock `now_ms` (Unix ms).
// Returns LimitExceeded when options.max_chars is too small to hold even the
// block with every entry omitted; never throws.
Result<StateBlock> RenderStateBlock(const LedgerState& state, int64_t now_ms,
                                    const StateBlockOptions& options = {});

// The ~4-characters-per-token estimate used for StateBlock::approx_tokens.
size_t ApproxTokens(size_t chars);

}  // namespace taskledger
