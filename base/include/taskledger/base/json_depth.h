// The nesting-depth guard every reader of untrusted JSON text runs before
// parsing it (tool outputs, trace lines, CLI input files): nlohmann::json
// parses recursively, so 100,000 nested brackets would overflow the stack
// before any limit inside the parser could apply. A linear scan of the text
// answers first.
//
// Also the one source of the depth limit itself: its default, its ceiling,
// and the parsing of a pack's `limits.max_depth` (extract.json), which both
// extraction and the Lua sandbox apply. Pure functions; thread-safe.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"

namespace taskledger {

// How deep JSON values may nest unless a pack says otherwise: tool outputs,
// trace lines, tool-call arguments, and values crossing into and out of Lua.
inline constexpr int kDefaultMaxJsonDepth = 64;
// The most a pack may raise it to (recursive walks stay far from the stack's end).
inline constexpr int kMaxJsonDepthCeiling = 512;

// A pack's `limits.max_depth` value: an integer in 1..kMaxJsonDepthCeiling.
// InvalidArgument (with the allowed range) otherwise.
Result<int> ParseMaxJsonDepth(const nlohmann::json& value);

// True if the JSON text nests arrays/objects more than `max_depth` deep.
// Brackets inside strings do not count; stops as soon as the limit is passed.
// Text that is not JSON gets an answer too (the parser reports what is wrong).
bool JsonNestsDeeperThan(std::string_view json_text, int max_depth);

}  // namespace taskledger
