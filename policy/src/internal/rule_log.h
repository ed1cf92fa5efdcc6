// RuleLog: what the rule API's global `log(...)` writes. Lines are kept per
// check and handed to the evaluation of the rule that wrote them (so they
// reach the decision record and `taskledger policy check` output, never the
// prompt). Bounded: at most kMaxLines lines per check, each cut to
// kMaxLineBytes (at a UTF-8 boundary; invalid UTF-8 becomes U+FFFD); further
// lines are counted and reported as one final "(N more log lines dropped)".
// Not thread-safe: belongs to one RuleRuntime.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lua.hpp"

namespace taskledger::policy_internal {

class RuleLog {
 public:
  static constexpr size_t kMaxLines = 20;
  static constexpr size_t kMaxLineBytes = 500;

  // Inside Protected(): defines the global `log` writing to this object.
  void Install(lua_State* L);
  // Starts a check: forgets everything written before.
  void Reset() {
    lines_.clear();
    dropped_ = 0;
    total_ = 0;
  }
  // Moves out the lines written since the last Take (and, at the end of a
  // check, the count of dropped ones as a last line).
  std::vector<std::string> Take(bool last);
  // True if a line was written since the last Take (most rules write none:
  // the checker then skips the Take).
  bool has_lines() const { return !lines_.empty(); }

 private:
  static int Log(lua_State* L);
  void Add(std::string line);

  std::vector<std::string> lines_;
  size_t total_ = 0;  // lines kept in this check
  size_t dropped_ = 0;
};

}  // namespace taskledger::policy_internal
