// Extractor: turns tool outputs and user messages into ledger updates, using a
// pack's compiled extraction rules (extract.json) and, optionally, its Lua
// extractors run by a PolicyChecker.
//
// Tool outputs are evidence: every update they yield is verified, with
// provenance source "tool", source_id "<tool>#<call id>", rule_id the mapping
// or extractor id, and the pack version (the turn is filled in by the Ledger
// when the update is staged). User messages yield claims (verified=false,
// source "user"); the ledger's ApplyUpdate keeps a claim from overwriting
// evidence and records the conflict.
//
// Bad input never reaches the ledger. Failures are typed extraction errors
// (ExtractionError: source, tool, call_id, rule if any, code, message) meant
// for Ledger::StageError (StageExtraction does both):
// - an output that fails validation (larger than max_output_bytes, invalid
//   UTF-8, nested deeper than max_depth, malformed JSON) yields no updates at
//   all and one error;
// - a mapping, text rule, user pattern or Lua extractor that fails loses only
//   its own updates (all of them, not just the failing match); the others apply.
// Nothing throws.
//
// Thread-compatible: one Extractor per thread (like the PolicyChecker it may
// use); the ExtractionRules it holds are shared and immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/base/clock.h"
#include "taskledger/base/status.h"
#include "taskledger/base/tool_call.h"
#include "taskledger/extract/extraction_rules.h"
#include "taskledger/ledger/entry.h"
#include "taskledger/ledger/extraction_error.h"

namespace taskledger {

class Ledger;
class LuaExtractors;

// The `code` of an extraction error.
namespace extraction_error {
inline constexpr std::string_view kTooLarge = "too_large";        // over max_output_bytes
inline constexpr std::string_view kInvalidUtf8 = "invalid_utf8";  // bytes that are not UTF-8
inline constexpr std::string_view kTooDeep = "too_deep";          // nesting over max_depth
inline constexpr std::string_view kMalformedJson = "malformed_json";
inline constexpr std::string_view kUnresolved = "unresolved";  // required placeholder missing
inline constexpr std::string_view kMissing = "missing";        // required rule matched nothing
inline constexpr std::string_view kCoercionFailed = "coercion_failed";
inline constexpr std::string_view kInvalidExpiry = "invalid_expiry";
inline constexpr std::string_view kTooManyFields = "too_many_fields";     // "store": "fields"
inline constexpr std::string_view kExtractorFailed = "extractor_failed";  // Lua error or budget
inline constexpr std::string_view kInvalidUpdate = "invalid_update";      // bad update from Lua
inline constexpr std::string_view kInvalidAction = "invalid_action";      // bad pending action
inline constexpr std::string_view kInternal = "internal";
}  // namespace extraction_error

// What one tool output or user message yields, in rule order: mappings and
// text rules in file order, then Lua extractors in the checker's order.
struct Extraction {
  std::vector<Update> updates;
  std::vector<ExtractionError> errors;
};

struct ExtractorOptions {
  // Wall clock for "seconds" expiries; SystemClock() if null. Must outlive the
  // Extractor (use the Ledger's clock so expiry and commit agree).
  const Clock* clock = nullptr;
  // Runs the pack's Lua extractors (normally the session's PolicyChecker);
  // without one only extract.json applies. Not owned; must outlive the
  // Extractor and be used on the same thread.
  LuaExtractors* checker = nullptr;
};

class Extractor {
 public:
  explicit Extractor(std::shared_ptr<const ExtractionRules> rules, ExtractorOptions options = {});
  ~Extractor();

  const ExtractionRules& rules() const { return *rules_; }

  // A raw tool output. It is JSON if its first non-blank byte is '{' or '[',
  // otherwise text (text rules apply, mappings do not). Outputs of tools that
  // no rule or extractor names are not examined at all.
  Extraction ExtractToolOutput(const ProposedCall& call, std::string_view output);
  // An output the caller already decoded (a trace replayer). A string is
  // handled as the raw output above; an object or array is checked for depth,
  // size and UTF-8 without recursion, then extracted without re-parsing; any
  // other scalar is handled as its JSON text.
  Extraction ExtractParsedToolOutput(const ProposedCall& call, const nlohmann::json& output);
  // One user message. `pending_action` is the action the agent proposed last
  // and the user may be confirming ({"tool", "arguments"}), or null; a
  // confirmation pattern binds it into the condition "confirmation".
  Extraction ExtractUserMessage(std::string_view text,
                                const nlohmann::json& pending_action = nullptr);

 private:
  struct ToolContext;
  // Working memory of tool-output extraction, kept from one call to the next
  // (so with the capacity of the largest so far) instead of allocated anew.
  struct Scratch;

  ToolContext NewToolContext(const ProposedCall& call);
  // `consume`: `doc` is a non-const object the caller destroys right after,
  // so updates may take their values out of it.
  Extraction ExtractValidatedJson(const ToolContext& tc, const nlohmann::json& doc, bool consume);
  Extraction ExtractValidatedText(const ToolContext& tc, std::string_view text);
  void RunMappings(const ToolContext& tc, const nlohmann::json& doc, Extraction& out);
  void RunTextRules(const ToolContext& tc, std::string_view text, Extraction& out) const;
  void RunLuaExtractors(const ToolContext& tc, const nlohmann::json& output, Extraction& out);

  std::shared_ptr<const ExtractionRules> rules_;
  SharedString pack_version_;  // rules_->pack_version(), shared by every update
  const Clock& clock_;
  LuaExtractors* checker_;
  std::unique_ptr<Scratch> scratch_;
};

// Stages an extraction into the ledger's current turn: every update (all or
// none; they only fail together on an empty key, which extraction never
// produces) and every error (visible in the turn record, so in audit). A claim
// that restates live verified evidence with the same value is dropped, so
// agreeing with a tool never downgrades its evidence to a claim.
Status StageExtraction(Ledger& ledger, Extraction extraction);

}  // namespace taskledger
