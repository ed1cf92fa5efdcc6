// RenderVisibility: what a rule pack keeps out of the prompt. Entries whose
// key matches an `internal` pattern never render (rules and the audit still
// see them); in entries matching a `redact` pattern, the JSON nodes the
// pattern's pointers select are replaced by "[redacted]" in the rendered
// value only. Declared in pack.json "render" (docs/render.md, "Keeping data
// out of the prompt"):
//   "render": {"internal": ["user.*.dob"],
//              "redact": {"reservation.*": ["/passengers/*/dob"]}}
// Key patterns are dotted like keys; `*` is exactly one segment, other
// segments compare with the key's text as stored (ids escaped, see
// docs/rule-api.md "Ids in keys"); a pattern also covers every key below it.
// Pointers are JSON Pointers (RFC 6901) in which `*` is every member or
// element; "" is the whole value. Immutable once parsed; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"

namespace taskledger {

class RenderVisibility {
 public:
  // Parses a pack.json "render" object (null: nothing hidden). InvalidArgument
  // names the offending member.
  static Result<RenderVisibility> FromJson(const nlohmann::json& spec);

  bool empty() const { return internal_.empty() && redact_.empty(); }
  // True if the entry at `key` must not render.
  bool Hides(std::string_view key) const;
  // True if `key` matches a redact pattern.
  bool Redacts(std::string_view key) const;
  // True if `key` matches a redact pattern; then `value` has the nodes its
  // pointers select replaced by "[redacted]".
  bool Redact(std::string_view key, nlohmann::json& value) const;

 private:
  using Segments = std::vector<std::string>;
  static bool Covers(const Segments& pattern, std::string_view key);

  std::vector<Segments> internal_;
  std::vector<std::pair<Segments, std::vector<Segments>>> redact_;  // key pattern, pointers
};

}  // namespace taskledger
