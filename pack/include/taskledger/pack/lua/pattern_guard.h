// Cost bound for Lua patterns, used to refuse string.find/match/gmatch/gsub
// calls that could backtrack for seconds (Lua's matcher has no step limit and
// no hook runs inside it: '.-.-.-b' over 400 bytes takes ~8 s).
//
// The bound: a backtracking match explores at most one path per way of
// splitting the subject between the pattern's variable-length items. With q
// items quantified by '*', '+' or '-' over a subject of n bytes that is
// C(n+q, q) paths per start position; each '?' doubles it; %b and
// back-references (%1..%9) scan up to n bytes each. Multiplied by the number
// of start positions (1 if anchored with '^', else n+1) and the pattern
// length, it over-estimates the real work, never under-estimates it. Pure;
// thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

namespace taskledger::lua {

// Estimated matcher steps for `pattern` over a subject of `subject_len` bytes.
// `scan_all` forces every start position to count (gmatch ignores '^').
double EstimatePatternWork(std::string_view pattern, size_t subject_len, bool scan_all);

}  // namespace taskledger::lua
