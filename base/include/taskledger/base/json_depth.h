// The nesting-depth guard every reader of untrusted JSON text runs before
// parsing it (tool outputs, trace lines, CLI input files): nlohmann::json
// parses recursively, so 100,000 nested brackets would overflow the stack
// before any limit inside the parser could apply. A linear scan of the text
// answers first. Pure function; thread-safe.
#pragma once

#include <string_view>

namespace taskledger {

// True if the JSON text nests arrays/objects more than `max_depth` deep.
// Brackets inside strings do not count; stops as soon as the limit is passed.
// Text that is not JSON gets an answer too (the parser reports what is wrong).
bool JsonNestsDeeperThan(std::string_view json_text, int max_depth);

}  // namespace taskledger
