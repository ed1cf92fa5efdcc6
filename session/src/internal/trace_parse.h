// The two readers behind ParseTraceLine (trace.h), for trace.cc, trace_simd.cc
// and the test that holds them to the same results. Both run after
// ParseTraceLine's checks of line size and blankness; ParseWithNlohmann also
// after its nesting-depth check, while ParseWithSimdjson enforces
// limits.max_depth itself (simdjson's depth limit: it declines any line
// nested deeper), so the separate depth pass runs only on lines it declines.
//
// ParseWithNlohmann is the reference: nlohmann's parser and the format's
// checks, the one source of every error message. ParseWithSimdjson reads the
// line with simdjson into the same types (nlohmann values for arguments,
// outputs and origin) about twice as fast, and answers nullopt for any line it
// does not take whole: invalid JSON, a line the format refuses, and the few
// valid lines where nlohmann's reading could differ from a plain conversion
// (see trace_simd.cc). The caller then uses the reference, so the two give the
// same result on every line. SameTrace is the equality that promise is held
// to (trace_parse_test, fuzz_trace): equal members and JSON values of equal
// types (unsigned vs signed integers, floats bit for bit). Pure functions;
// thread-safe (the simdjson parser is per thread).
#pragma once

#include <optional>
#include <string_view>

#include "taskledger/base/status.h"
#include "taskledger/session/trace.h"

namespace taskledger::trace_internal {

Result<TraceConversation> ParseWithNlohmann(std::string_view line, const TraceLimits& limits);

std::optional<TraceConversation> ParseWithSimdjson(std::string_view line,
                                                   const TraceLimits& limits);

bool SameTrace(const TraceConversation& a, const TraceConversation& b);

}  // namespace taskledger::trace_internal
