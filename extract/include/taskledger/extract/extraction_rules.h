// ExtractionRules: a rule pack's extract.json, validated and compiled once when
// the pack loads (JSON pointers split, templates parsed, regular expressions
// compiled), so extracting from a tool output never re-reads the rules.
//
// extract.json is specified in docs/rule-api.md ("extract.json"). Loading is
// strict: an unknown field, a bad pointer, template, category, coercion, expiry
// or regular expression is an InvalidArgument naming the rule, because a typo
// in a rule would otherwise silently extract nothing.
// Immutable once loaded; share one instance (shared_ptr<const>) between threads.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "taskledger/base/json_depth.h"
#include "taskledger/base/status.h"

namespace taskledger {

class RulePack;

// Limits applied to every tool output and user message before it is parsed.
struct ExtractionLimits {
  size_t max_output_bytes = 1u << 20;    // larger outputs yield no updates
  int max_depth = kDefaultMaxJsonDepth;  // deeper JSON nesting yields no updates
  // Longest text (user message, non-JSON output) run through regular
  // expressions. glibc's regexec tries every start position, so an unanchored
  // pattern like an e-mail address costs O(n^2) on adversarial text (8 KiB:
  // ~0.1 s, 100 KiB: ~20 s); longer texts yield no updates.
  size_t max_text_bytes = 8u << 10;
};

class ExtractionRules {
 public:
  // Loads <pack_dir>/extract.json. A pack without one has no extraction rules
  // (not an error); a pack_dir that does not exist is NotFound.
  static Result<std::shared_ptr<const ExtractionRules>> Load(const std::filesystem::path& pack_dir,
                                                             std::string pack_version);
  // The extraction rules of a loaded RulePack (its extract.json and version).
  static Result<std::shared_ptr<const ExtractionRules>> FromPack(const RulePack& pack);
  // Compiles an already-parsed extract.json document.
  static Result<std::shared_ptr<const ExtractionRules>> FromJson(const nlohmann::json& spec,
                                                                 std::string pack_version);
  // The empty rule set: extracts nothing, applies the default limits.
  static std::shared_ptr<const ExtractionRules> Empty();

  ~ExtractionRules();
  ExtractionRules(const ExtractionRules&) = delete;
  ExtractionRules& operator=(const ExtractionRules&) = delete;

  const std::string& pack_version() const { return pack_version_; }
  const ExtractionLimits& limits() const { return limits_; }
  // True if some mapping or text rule applies to `tool` (exact name or glob).
  bool HasRulesFor(std::string_view tool) const;
  // Number of mappings, text rules and user patterns in total.
  size_t size() const;

  // The compiled form; defined in extract/src/internal, used by the Extractor.
  struct Compiled;
  const Compiled& compiled() const { return *compiled_; }

 private:
  ExtractionRules(std::unique_ptr<Compiled> compiled, ExtractionLimits limits,
                  std::string pack_version);

  std::unique_ptr<Compiled> compiled_;
  ExtractionLimits limits_;
  std::string pack_version_;
};

}  // namespace taskledger
