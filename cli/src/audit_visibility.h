// What a rule pack's pack.json "render" (internal, redact; docs/render.md,
// "Keeping data out of the prompt") kept out of the prompt, for the audit
// verbs: the auditor sees every entry, and with --rules also which of them
// the agent never saw (internal) or saw with fields replaced (redacted).
// Single-threaded like the CLI.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"
#include "taskledger/ledger/state.h"
#include "taskledger/render/visibility.h"

namespace taskledger::cli {

// The live entries of a state a RenderVisibility acts on, in category then
// key order: `internal` never rendered, `redacted` rendered with at least one
// field replaced by "[redacted]" (a redact pattern that changes nothing in a
// value does not list it, as the renderer leaves such a value whole).
struct PromptMarks {
  struct Item {
    Category category;
    std::string key;
  };
  std::vector<Item> internal, redacted;
};

// The pack's render visibility: nullopt when `rules_dir` is empty; an error
// when the pack does not load or its "render" section is malformed.
Result<std::optional<RenderVisibility>> LoadRenderVisibility(const std::string& rules_dir);

PromptMarks MarkPrompt(const LedgerState& state, int64_t now_ms, const RenderVisibility& vis);

// {"internal": [{"category", "key"}...], "redacted": [...]}.
nlohmann::json PromptMarksJson(const PromptMarks& marks);

// One line "kept out of the prompt by pack.json \"render\": N internal, M
// redacted", then one indented line per entry ("internal  fact user.u1.dob").
std::string PromptMarksText(const PromptMarks& marks);

}  // namespace taskledger::cli
