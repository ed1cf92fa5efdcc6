// The audit page: one self-contained HTML file (inline CSS and one small
// inline script, no external resources, opens offline) showing an index of
// the conversations with their counts (turns, calls, decisions, calls held
// back), a per-rule table (evaluated, held back, decided), a "held back only"
// filter (CSS, works without scripts) and a search box (the script), then per
// conversation a timeline of turns with each turn's decisions, calls (their
// outcomes named: uncertain, deduplicated, awaiting approval ...), state diff
// and extraction errors, blocked calls highlighted, and the final state with
// provenance. Under each decision: its evidence chain (per rule, the deciding
// one first, each ledger entry read with its value, verified or claimed, and
// a link to the call whose output wrote it) and the ledger state as it was at
// that decision.
//
// Stable hooks for tests and tools: every conversation is a
// <section class="conversation"> (also "has-block" when a call was held
// back), its index row a <tr class="conversation-row">, its timeline an
// <ol class="timeline">, each turn an <li class="turn" id="turn-C-V">, each
// decision a <div class="decision OUTCOME"> (OUTCOME: allow, deny, confirm,
// require_approval) with data-rule and data-version-seen attributes; blocked
// calls also carry class "blocked"; the rule table's rows carry data-rule;
// evidence rows are <tr class="read"> ("read deciding" for the deciding rule)
// with data-rule; call rows are <tr class="call OUTCOME">.
// Single-threaded.
#pragma once

#include <string>
#include <vector>

#include "taskledger/base/status.h"
#include "taskledger/ledger/store.h"
#include "taskledger/render/visibility.h"

namespace taskledger::cli {

// Writes the page for `conversations` (in that order) to `path`. With
// `visibility` (a pack's pack.json "render"), each conversation's final state
// also lists what it kept out of the prompt (<pre class="prompt-marks">).
Status WriteAuditHtml(Store& store, const std::vector<ConversationId>& conversations,
                      const std::string& path, const RenderVisibility* visibility = nullptr);

// Escapes text for HTML element content and attribute values.
std::string HtmlEscape(std::string_view text);

}  // namespace taskledger::cli
