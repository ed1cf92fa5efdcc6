// Building one ledger Update from one match of a mapping, text rule or user
// pattern: the value (matched node, literal, template or pointed-to node), its
// coercion, its expiry and its provenance. Shared by tool-output and
// user-message extraction so the three kinds of rule behave alike.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "internal/compiled_rules.h"
#include "internal/posix_regex.h"
#include "internal/template.h"
#include "taskledger/ledger/entry.h"

namespace taskledger::extract_internal {

// Where updates come from; the same for every match of one extraction.
struct UpdateOrigin {
  SourceKind source = SourceKind::kToolOutput;
  const SharedString* source_id = nullptr;
  const SharedString* pack_version = nullptr;
  int64_t now_ms = 0;
};

enum class BuildOutcome {
  kBuilt,    // `out` holds the update
  kSkipped,  // a placeholder or the value did not resolve: no update, no error
  kFailed,   // the rule failed for this output: `code` and `message` say why
};

struct BuildProblem {
  std::string code;
  std::string message;
};

// Builds the update of `spec` for the match `ctx` into `out`, which must be a
// default-constructed Update (and is the caller's to discard unless kBuilt). A
// skip becomes a failure (code "unresolved") when the spec is required.
// With `deferred`, a value that is a string, object or array of the output,
// taken as it is, is not copied: on kBuilt, *deferred is that node (else
// nullptr) and out.value stays null for the caller to fill in (see
// DeferredValues).
BuildOutcome BuildUpdate(const UpdateSpec& spec, const MatchContext& ctx,
                         const UpdateOrigin& origin, Update& out, BuildProblem& problem,
                         const nlohmann::json** deferred = nullptr);

// "store": "fields": the updates `whole` stands for, appended to `out`. A
// non-empty object or array becomes one update per scalar (and per empty
// object or array) below it, keyed `<whole.key>.<member>` (the member name
// escaped as a key segment) or `<whole.key>.<index>` (0-based, as JSON
// pointers count), nested as deep as the value; each carries whole's
// provenance and expiry. Anything else is `whole` itself. False, with
// `problem` set and nothing appended, beyond kMaxFields updates.
inline constexpr size_t kMaxFields = 1000;
bool SplitFields(Update whole, std::vector<Update>& out, BuildProblem& problem);

// Fills `captures` from a regex match of `text`: [0] the whole match, [i]
// group i (absent if it did not participate).
void CapturesFromMatch(std::string_view text, const RegexMatch& match,
                       std::vector<Capture>& captures);

// Applies a coercion. Returns false if `v` cannot be converted.
bool Coerce(Coercion c, nlohmann::json& v);

}  // namespace taskledger::extract_internal
