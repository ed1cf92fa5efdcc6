// Extractor, tool outputs: validation of the raw or decoded output, then
// mappings, text rules and Lua extractors, each failing alone. See
// extractor.h for the error model. Thread-compatible (one per thread).
#include "taskledger/extract/extractor.h"

#include <exception>

#include "internal/compiled_rules.h"
#include "internal/deferred_values.h"
#include "internal/extraction_errors.h"
#include "internal/input_check.h"
#include "internal/lua_runs.h"
#include "internal/update_builder.h"
#include "taskledger/base/json_depth.h"
#include "taskledger/pack/lua_extractors.h"

namespace taskledger {

using extract_internal::BuildOutcome;
using extract_internal::BuildProblem;
using extract_internal::MatchContext;
using nlohmann::json;

struct Extractor::ToolContext {
  const ProposedCall& call;
  SharedString source_id;  // "<tool>#<call id>", shared by every update
  int64_t now_ms;
  bool has_rules;
  bool has_lua;

  ExtractionError Error(std::string_view rule, std::string_view code, std::string message) const {
    return extract_internal::ToolError(call, rule, code, std::move(message));
  }
};

struct Extractor::Scratch {
  std::string source_id;                            // composed here, then shared
  std::vector<const json*> chain;                   // of the match being built
  std::vector<extract_internal::Capture> captures;  // of the match being built
  extract_internal::ResolvedPointers pointers;      // of one tool's rules in the output
  extract_internal::DeferredValues deferred;        // of the whole extraction
};

Extractor::Extractor(std::shared_ptr<const ExtractionRules> rules, ExtractorOptions options)
    : rules_(rules ? std::move(rules) : ExtractionRules::Empty()),
      pack_version_(rules_->pack_version()),
      clock_(options.clock ? *options.clock : SystemClock()),
      checker_(options.checker),
      scratch_(std::make_unique<Scratch>()) {}

Extractor::~Extractor() = default;

Extractor::ToolContext Extractor::NewToolContext(const ProposedCall& call) {
  std::string& source_id = scratch_->source_id;
  source_id.assign(call.tool).append(1, '#').append(call.id);
  return ToolContext{call, SharedString(source_id), clock_.NowMs(), rules_->HasRulesFor(call.tool),
                     checker_ != nullptr && checker_->HasExtractors(call.tool)};
}

Extraction Extractor::ExtractToolOutput(const ProposedCall& call, std::string_view output) {
  const ToolContext tc = NewToolContext(call);
  Extraction out;
  if (!tc.has_rules && !tc.has_lua) return out;
  const ExtractionLimits& limits = rules_->limits();
  if (output.size() > limits.max_output_bytes) {
    out.errors.push_back(tc.Error("", extraction_error::kTooLarge,
                                  "output of " + std::to_string(output.size()) +
                                      " bytes is larger than the limit of " +
                                      std::to_string(limits.max_output_bytes)));
    return out;
  }
  auto utf8_error = [&](size_t bad) {
    return tc.Error("", extraction_error::kInvalidUtf8,
                    "output is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  };
  size_t bad = 0;
  if (!extract_internal::LooksLikeJson(output)) {
    if (!extract_internal::IsValidUtf8(output, &bad)) {
      out.errors.push_back(utf8_error(bad));
      return out;
    }
    if (output.size() > limits.max_text_bytes) {
      out.errors.push_back(tc.Error("", extraction_error::kTooLarge,
                                    "text output of " + std::to_string(output.size()) +
                                        " bytes is larger than the text limit of " +
                                        std::to_string(limits.max_text_bytes)));
      return out;
    }
    return ExtractValidatedText(tc, output);
  }
  // Depth is enforced on the text, before a DOM exists: a DOM of 100,000
  // nested arrays would be safe to build but not to copy, compare or print.
  if (JsonNestsDeeperThan(output, limits.max_depth)) {
    out.errors.push_back(
        tc.Error("", extraction_error::kTooDeep,
                 "output nests deeper than " + std::to_string(limits.max_depth) + " levels"));
    return out;
  }
  json doc;
  try {
    // The parser accepts only well-formed UTF-8 (inside strings; any byte
    // over 0x7F outside one is a syntax error), so a separate UTF-8 pass is
    // needed only to name the failure.
    doc = json::parse(output);
  } catch (const std::exception& e) {
    if (!extract_internal::IsValidUtf8(output, &bad)) {
      out.errors.push_back(utf8_error(bad));
    } else {
      out.errors.push_back(tc.Error("", extraction_error::kMalformedJson, e.what()));
    }
    return out;
  }
  return ExtractValidatedJson(tc, doc, /*consume=*/true);
}

Extraction Extractor::ExtractParsedToolOutput(const ProposedCall& call, const json& output) {
  if (output.is_string()) return ExtractToolOutput(call, output.get_ref<const std::string&>());
  if (!output.is_object() && !output.is_array()) return ExtractToolOutput(call, output.dump());
  const ToolContext tc = NewToolContext(call);
  Extraction out;
  if (!tc.has_rules && !tc.has_lua) return out;
  const ExtractionLimits& limits = rules_->limits();
  std::string detail;
  switch (
      extract_internal::CheckParsed(output, limits.max_depth, limits.max_output_bytes, &detail)) {
    case extract_internal::ParsedProblem::kNone:
      return ExtractValidatedJson(tc, output, /*consume=*/false);
    case extract_internal::ParsedProblem::kTooDeep:
      out.errors.push_back(tc.Error("", extraction_error::kTooDeep, detail));
      break;
    case extract_internal::ParsedProblem::kInvalidUtf8:
      out.errors.push_back(tc.Error("", extraction_error::kInvalidUtf8, detail));
      break;
    case extract_internal::ParsedProblem::kTooLarge:
      out.errors.push_back(tc.Error("", extraction_error::kTooLarge, detail));
      break;
  }
  return out;
}

Extraction Extractor::ExtractValidatedJson(const ToolContext& tc, const json& doc, bool consume) {
  Extraction out;
  extract_internal::DeferredValues& deferred = scratch_->deferred;
  deferred.Clear();  // of what an earlier extraction's exception left
  try {
    RunMappings(tc, doc, out);
    if (tc.has_lua) RunLuaExtractors(tc, doc, out);
    // Last, once nothing reads the output any more: a consumed output gives
    // its strings, objects and arrays to the updates instead of copies.
    deferred.Fill(out.updates, consume);
  } catch (const std::exception& e) {
    // Only allocation failure can get here; drop everything rather than
    // stage a partial, unexplained result.
    out.updates.clear();
    out.errors.push_back(tc.Error("", extraction_error::kInternal, e.what()));
  }
  return out;
}

Extraction Extractor::ExtractValidatedText(const ToolContext& tc, std::string_view text) {
  Extraction out;
  try {
    RunTextRules(tc, text, out);
    if (tc.has_lua) RunLuaExtractors(tc, json(std::string(text)), out);
  } catch (const std::exception& e) {
    out.updates.clear();
    out.errors.push_back(tc.Error("", extraction_error::kInternal, e.what()));
  }
  return out;
}

void Extractor::RunMappings(const ToolContext& tc, const json& doc, Extraction& out) {
  extract_internal::UpdateOrigin origin{SourceKind::kToolOutput, &tc.source_id, &pack_version_,
                                        tc.now_ms};
  std::vector<const json*>& chain_scratch = scratch_->chain;
  std::vector<extract_internal::Capture>& capture_scratch = scratch_->captures;
  extract_internal::ResolvedPointers& pointers = scratch_->pointers;
  extract_internal::DeferredValues& deferred = scratch_->deferred;
  rules_->compiled().ForEachToolRules(tc.call.tool, [&](const extract_internal::ToolRules& tr) {
    out.updates.reserve(out.updates.size() + 2 * tr.mappings.size());
    deferred.Reserve(out.updates.capacity());
    pointers.Resolve(tr.pointers, doc);
    for (const extract_internal::Mapping& m : tr.mappings) {
      const size_t mark = out.updates.size();
      size_t matches = 0;
      bool failed = false;
      BuildProblem problem;
      std::string where;
      auto on_match = [&](const json&, const auto& chain, const auto& captures) {
        if (failed) return;
        ++matches;
        MatchContext ctx{&pointers, &chain, &captures, &tc.call.arguments};
        // Built in place: an Update is large, and most matches yield one.
        const json* deferred_value = nullptr;
        switch (extract_internal::BuildUpdate(m.spec, ctx, origin, out.updates.emplace_back(),
                                              problem,
                                              m.store_fields ? nullptr : &deferred_value)) {
          case BuildOutcome::kBuilt:
            if (deferred_value != nullptr) deferred.Add(deferred_value, out.updates.size() - 1);
            if (m.store_fields) {
              Update whole = std::move(out.updates.back());
              out.updates.pop_back();
              if (!extract_internal::SplitFields(std::move(whole), out.updates, problem)) {
                failed = true;
                where = m.path.Describe(captures);
              }
            }
            break;
          case BuildOutcome::kSkipped:
            out.updates.pop_back();
            break;
          case BuildOutcome::kFailed:
            out.updates.pop_back();
            failed = true;
            where = m.path.Describe(captures);
            break;
        }
      };
      // The walk starts where the path's first wildcard (or its end) is,
      // from the node resolved once for every mapping that shares the prefix.
      if (const json* start = pointers.at(m.fixed_prefix); start != nullptr) {
        pointers.ChainTo(m.fixed_prefix, chain_scratch);
        m.path.ForEachMatchFrom(*start, m.fixed_segments, chain_scratch, capture_scratch, on_match);
      }
      if (!failed && matches == 0 && m.spec.required) {
        failed = true;
        problem = {std::string(extraction_error::kMissing), "path matched nothing"};
        where = m.path.text();
      }
      if (failed) {
        // A failing mapping loses all of its own updates, never another's.
        out.updates.resize(mark);
        deferred.DropFrom(mark);
        out.errors.push_back(
            tc.Error(m.spec.id, problem.code, "at " + where + ": " + problem.message));
      }
    }
  });
}

void Extractor::RunTextRules(const ToolContext& tc, std::string_view text, Extraction& out) const {
  extract_internal::UpdateOrigin origin{SourceKind::kToolOutput, &tc.source_id, &pack_version_,
                                        tc.now_ms};
  extract_internal::RegexMatch match;
  std::vector<extract_internal::Capture> captures;
  rules_->compiled().ForEachToolRules(tc.call.tool, [&](const extract_internal::ToolRules& tr) {
    for (const extract_internal::TextRule& r : tr.text_rules) {
      if (!r.regex.Search(text, 0, match)) {
        if (r.spec.required) {
          out.errors.push_back(tc.Error(r.spec.id, extraction_error::kMissing,
                                        "text rule did not match the output"));
        }
        continue;
      }
      extract_internal::CapturesFromMatch(text, match, captures);
      MatchContext ctx{nullptr, nullptr, &captures, &tc.call.arguments};
      Update u;
      BuildProblem problem;
      switch (extract_internal::BuildUpdate(r.spec, ctx, origin, u, problem)) {
        case BuildOutcome::kBuilt:
          out.updates.push_back(std::move(u));
          break;
        case BuildOutcome::kSkipped:
          break;
        case BuildOutcome::kFailed:
          out.errors.push_back(tc.Error(r.spec.id, problem.code, problem.message));
          break;
      }
    }
  });
}

void Extractor::RunLuaExtractors(const ToolContext& tc, const json& output, Extraction& out) {
  std::string_view code;
  std::string message;
  for (ExtractorRun& run : checker_->RunExtractors(tc.call, output, tc.now_ms)) {
    message.clear();
    if (!extract_internal::TakeLuaRun(run, rules_->limits(), out.updates, code, message)) {
      out.errors.push_back(tc.Error(run.extractor_id, code, std::move(message)));
    }
  }
}

}  // namespace taskledger
