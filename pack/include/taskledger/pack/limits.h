// CheckerLimits: the bounds on everything a rule pack's Lua may do in one
// check or one extractor run (instructions, wall-clock time, memory, and the
// work of Lua's pattern functions). Used by the sandbox that compiles a pack
// at load time and by every PolicyChecker. Plain value type.
#pragma once

#include <cstddef>
#include <cstdint>

#include "taskledger/base/json_depth.h"

namespace taskledger {

struct CheckerLimits {
  // Lua VM instructions one check (all its rules) or one extractor may run.
  int64_t instruction_budget = 2'000'000;
  // Wall-clock bound on one check / one extractor, polled from the instruction
  // hook (catches time spent in library functions between instructions).
  int64_t deadline_ms = 250;
  // Cap on everything the lua_State allocates (pack code, views, rule data).
  size_t memory_limit_bytes = 32u << 20;
  // string.find/match/gmatch/gsub: longest subject and pattern accepted, and
  // the largest estimated backtracking work (see docs/rule-api.md).
  size_t pattern_max_subject = 64u << 10;
  size_t pattern_max_pattern = 256;
  double pattern_max_work = 2e7;
  // How deep a JSON value crossing into or out of Lua may nest (tool
  // outputs given to extractors, call arguments, values rules return).
  // PolicyChecker::Create raises it to the pack's max_json_depth(), so a pack
  // whose extract.json accepts deeper outputs has Lua extractors that do too.
  int max_json_depth = kDefaultMaxJsonDepth;
};

}  // namespace taskledger
