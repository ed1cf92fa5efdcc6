// Extractor, user messages: the patterns of extract.json's "user" section,
// whose values are claims (verified=false, source "user"), the confirmation
// pattern that binds the user's "yes" to the pending action, then the pack's
// Lua extractors declaring `user = true` (claims too). Also StageExtraction.
// Thread-compatible (one Extractor per thread).
#include <exception>

#include "internal/compiled_rules.h"
#include "internal/extraction_errors.h"
#include "internal/input_check.h"
#include "internal/lua_runs.h"
#include "internal/update_builder.h"
#include "taskledger/extract/extractor.h"
#include "taskledger/ledger/ledger.h"

namespace taskledger {
namespace {

using extract_internal::BuildOutcome;
using extract_internal::BuildProblem;
using extract_internal::UserError;
using nlohmann::json;

const SharedString kUserSource = "user";

}  // namespace

Extraction Extractor::ExtractUserMessage(std::string_view text, const json& pending_action) {
  Extraction out;
  const auto& patterns = rules_->compiled().user;
  const bool has_lua = checker_ != nullptr && checker_->HasUserExtractors();
  if (patterns.empty() && !has_lua) return out;
  const ExtractionLimits& limits = rules_->limits();
  if (text.size() > limits.max_text_bytes) {
    out.errors.push_back(UserError("", extraction_error::kTooLarge,
                                   "message of " + std::to_string(text.size()) +
                                       " bytes is larger than the text limit of " +
                                       std::to_string(limits.max_text_bytes)));
    return out;
  }
  size_t bad = 0;
  if (!extract_internal::IsValidUtf8(text, &bad)) {
    out.errors.push_back(
        UserError("", extraction_error::kInvalidUtf8,
                  "message is not valid UTF-8 (byte " + std::to_string(bad) + ")"));
    return out;
  }
  extract_internal::UpdateOrigin origin{SourceKind::kUserMessage, &kUserSource, &pack_version_,
                                        clock_.NowMs()};
  extract_internal::RegexMatch match;
  std::vector<extract_internal::Capture> captures;
  try {
    for (const extract_internal::UserPattern& p : patterns) {
      if (p.confirmation) {
        if (!p.regex.Search(text, 0, match)) continue;
        std::string detail;
        if (!pending_action.is_null() &&
            extract_internal::CheckParsed(pending_action, limits.max_depth, limits.max_output_bytes,
                                          &detail) != extract_internal::ParsedProblem::kNone) {
          // A confirmation bound to no action would confirm any action, so a
          // pending action we cannot store drops the confirmation instead.
          out.errors.push_back(
              UserError(p.spec.id, extraction_error::kInvalidAction, "pending action: " + detail));
          continue;
        }
        Update u;
        u.category = Category::kCondition;
        u.key = "confirmation";
        u.value = {{"text", std::string(text)},
                   {"action", pending_action.is_discarded() ? json(nullptr) : pending_action}};
        u.provenance = {0, SourceKind::kUserMessage, kUserSource, false, p.spec.id, pack_version_};
        out.updates.push_back(std::move(u));
        continue;
      }
      // Every match yields an update, in message order, so for one key the
      // last match in the message is the one that stays.
      const size_t mark = out.updates.size();
      size_t from = 0;
      while (from <= text.size() && p.regex.Search(text, from, match)) {
        const auto& whole = match.groups[0];
        from = whole.end > whole.begin ? whole.end : whole.end + 1;
        extract_internal::CapturesFromMatch(text, match, captures);
        extract_internal::MatchContext ctx{nullptr, nullptr, &captures, nullptr};
        Update u;
        BuildProblem problem;
        BuildOutcome r = extract_internal::BuildUpdate(p.spec, ctx, origin, u, problem);
        if (r == BuildOutcome::kBuilt) {
          out.updates.push_back(std::move(u));
        } else if (r == BuildOutcome::kFailed) {
          out.updates.resize(mark);
          out.errors.push_back(UserError(p.spec.id, problem.code, problem.message));
          break;
        }
      }
    }
    if (has_lua) {
      std::string_view code;
      std::string message;
      for (ExtractorRun& run : checker_->RunUserExtractors(text, origin.now_ms)) {
        message.clear();
        if (!extract_internal::TakeLuaRun(run, limits, out.updates, code, message)) {
          out.errors.push_back(UserError(run.extractor_id, code, std::move(message)));
        }
      }
    }
  } catch (const std::exception& e) {
    out.updates.clear();
    out.errors.push_back(UserError("", extraction_error::kInternal, e.what()));
  }
  return out;
}

Status StageExtraction(Ledger& ledger, Extraction extraction) {
  for (ExtractionError& e : extraction.errors) ledger.StageError(std::move(e));
  // A claim that restates live verified evidence adds nothing, and applying
  // it would replace the evidence with a mere claim of the same value.
  const int64_t now = ledger.clock().NowMs();
  std::erase_if(extraction.updates, [&](const Update& u) {
    if (u.op != UpdateOp::kSet || u.provenance.verified) return false;
    const Entry* e = ledger.working().FindLive(u.category, u.key, now);
    return e != nullptr && e->provenance.verified && e->value == u.value;
  });
  if (extraction.updates.empty()) return Status::Ok();
  return ledger.StageAll(std::move(extraction.updates));
}

}  // namespace taskledger
