// Checks run on untrusted tool outputs and user messages before anything is
// built from them: UTF-8 validity, JSON nesting depth (on the text, before a
// DOM exists, so 100,000 nested brackets cost a linear scan and never a deep
// recursion) and, for an output the caller already parsed, the same limits
// checked by an iterative walk. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace taskledger::extract_internal {

// True if `s` is well-formed UTF-8 (no overlongs, surrogates or code points
// above U+10FFFF). On false, *bad_offset is the offset of the first bad byte.
bool IsValidUtf8(std::string_view s, size_t* bad_offset = nullptr);

// True if the first non-whitespace byte is '{' or '[': the output is JSON
// text; anything else is treated as plain text.
bool LooksLikeJson(std::string_view s);

// Problems found in an already-parsed value, in the order checked.
enum class ParsedProblem { kNone, kTooDeep, kInvalidUtf8, kTooLarge };

// Walks `v` without recursion. The size is an estimate of the serialised
// length (strings and member names plus a few bytes per node), enough to
// refuse an output that could not have arrived under max_bytes.
ParsedProblem CheckParsed(const nlohmann::json& v, int max_depth, size_t max_bytes,
                          std::string* detail);

}  // namespace taskledger::extract_internal
