// Trust declared by a pack: which tool outputs, and which fields of them, may
// decide an argument. Parsed from pack.json's `trust` object:
//
//   "trust": {
//     "user": true,                 // the user's messages (default true)
//     "default": false,             // outputs of tools not listed (default false)
//     "tools": {
//       "get_webpage": false,                        // the whole output
//       "read_channel_messages": {"/*/sender": true, "/*/body": false},
//       "read_*": true                               // a tool-name glob
//     }
//   }
//
// Paths are JSON pointers into the tool's output whose segments may be `*`
// (one segment) or `**` (any number, also none); "" is the whole output (a
// text output's only path). Precedence: a tool named exactly beats a glob, a
// longer glob beats a shorter one; within a tool the path pattern with the
// most literal segments wins, a tie between trusted and untrusted is
// untrusted, and a path no pattern matches takes the tool's `"**"` entry if
// any, else `default`. Immutable after parsing; thread-safe to read.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"

namespace taskledger::provenance {

class TrustPolicy {
 public:
  // Nothing declared: the user trusted, every tool output untrusted.
  TrustPolicy() = default;

  // Parses the `trust` object above; null gives the default policy. Unknown
  // keys, non-boolean values and malformed paths are InvalidArgument naming
  // the offending key.
  static Result<TrustPolicy> FromJson(const nlohmann::json& trust);

  bool user_trusted() const { return user_; }
  // Whether the value at JSON pointer `pointer` of `tool`'s output is trusted.
  bool Trusted(std::string_view tool, std::string_view pointer) const;
  // The declarations back as JSON (for `pack show` and tests).
  nlohmann::json ToJson() const;

 private:
  struct PathRule {
    std::string pattern;
    std::vector<std::string> segments;
    bool trusted = false;
  };
  struct ToolRule {
    std::string tool;  // name or glob
    std::vector<PathRule> paths;
  };
  const ToolRule* FindTool(std::string_view tool) const;

  bool user_ = true;
  bool default_ = false;
  std::vector<ToolRule> tools_;

 public:
  // Trusted() for the fields of one tool's output, the tool's declaration
  // found once and its scratch reused (an output's walk asks for every
  // field). Valid while the policy it came from lives; one per thread.
  class ToolTrust {
   public:
    bool Trusted(std::string_view pointer) const;

   private:
    friend class TrustPolicy;
    const TrustPolicy* policy_ = nullptr;
    const ToolRule* rule_ = nullptr;
    mutable std::vector<std::string_view> segments_;  // scratch of Trusted
  };
  ToolTrust ForTool(std::string_view tool) const;
};

}  // namespace taskledger::provenance
