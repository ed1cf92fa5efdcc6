// The compiled form of extract.json: what ExtractionRules::Load builds and the
// Extractor evaluates. Plain immutable data once built; thread-safe to share.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "internal/json_pointer.h"
#include "internal/pointer_table.h"
#include "internal/posix_regex.h"
#include "internal/template.h"
#include "taskledger/extract/extraction_rules.h"
#include "taskledger/ledger/entry.h"
#include "taskledger/pack/rule_pack.h"

namespace taskledger::extract_internal {

enum class Coercion { kNone, kString, kNumber, kInteger, kBoolean };

// What an update's value is: the matched node, a literal, a template string or
// (a template that is one pointer placeholder) the node it points to.
struct ValueSpec {
  enum class Kind { kMatched, kLiteral, kTemplate } kind = Kind::kMatched;
  nlohmann::json literal;
  Template tmpl;
};

struct ExpirySpec {
  enum class Kind { kNone, kTurns, kSeconds, kSecondsFrom } kind = Kind::kNone;
  uint64_t turns = 0;
  double seconds = 0;
  Template from;            // kSecondsFrom: a single {/abs} or {./rel} pointer
  double unit_seconds = 1;  // kSecondsFrom: seconds per unit of the field
};

// What a mapping, text rule and user pattern have in common: where the update
// goes and how its value is made.
struct UpdateSpec {
  SharedString id;  // shared by the provenance of every update it makes
  Category category = Category::kFact;
  Template key;
  ValueSpec value;
  Coercion coerce = Coercion::kNone;
  ExpirySpec expire;
  bool verified = true;
  bool required = false;
};

struct Mapping {
  UpdateSpec spec;
  CompiledPointer path;
  // The segments of `path` before its first wildcard (all of them if it has
  // none), resolved once per output as node `fixed_prefix` of the tool's table.
  size_t fixed_segments = 0;
  PointerTable::Id fixed_prefix = PointerTable::kRoot;
  // "store": "fields": an object or array value becomes one entry per scalar
  // below it (SplitFields) instead of one structured entry.
  bool store_fields = false;
};

struct TextRule {
  UpdateSpec spec;
  PosixRegex regex;
};

struct UserPattern {
  UpdateSpec spec;
  PosixRegex regex;
  bool confirmation = false;
};

struct ToolRules {
  std::vector<Mapping> mappings;
  std::vector<TextRule> text_rules;
  PointerTable pointers;  // of `mappings`
};

// Interns the path prefix and the {/abs} placeholders of `m` in `table` (the
// table of the tool `m` belongs to). Done once, when the mapping is compiled.
void InternPointers(Mapping& m, PointerTable& table);

// Lets the tool map be searched with a string_view without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace taskledger::extract_internal

namespace taskledger {

struct ExtractionRules::Compiled {
  std::unordered_map<std::string, extract_internal::ToolRules, extract_internal::StringHash,
                     std::equal_to<>>
      exact;
  std::vector<std::pair<std::string, extract_internal::ToolRules>> globs;  // in file order
  std::vector<extract_internal::UserPattern> user;

  // Calls f(const ToolRules&) for the rules of `tool`: its exact entry first,
  // then every matching glob entry in file order.
  template <class F>
  void ForEachToolRules(std::string_view tool, F&& f) const {
    if (auto it = exact.find(tool); it != exact.end()) f(it->second);
    for (const auto& [pattern, rules] : globs) {
      if (GlobMatch(pattern, tool)) f(rules);
    }
  }
};

}  // namespace taskledger
