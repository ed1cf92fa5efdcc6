// SameTrace (see internal/trace_parse.h): whether two parsed trace lines are
// the same down to the JSON number types, for the test and the fuzz target
// that hold the simdjson reader to the nlohmann reference. nlohmann's ==
// calls an unsigned 5 and a signed 5 equal, and 0.0 equal to -0.0; a reader
// that gave one for the other would change what a rule sees (math.type,
// string.format), so values are compared type by type and floats bit by bit.
#include <bit>
#include <cstdint>

#include "internal/trace_parse.h"

namespace taskledger::trace_internal {
namespace {

using nlohmann::json;

bool SameTyped(const json& a, const json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
      if (ia.key() != ib.key() || !SameTyped(*ia, *ib)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!SameTyped(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_number_float()) {
    // Bit for bit: -0.0 is not 0.0 here; any NaN equals any NaN.
    const double x = a.get<double>(), y = b.get<double>();
    return std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(y) || (x != x && y != y);
  }
  return a == b;
}

bool SameEvent(const TraceEvent& a, const TraceEvent& b) {
  return a.type == b.type && a.text == b.text && a.id == b.id && a.tool == b.tool &&
         SameTyped(a.arguments, b.arguments) && a.writes == b.writes &&
         a.expect.has_value() == b.expect.has_value() &&
         (!a.expect ||
          (a.expect->decision == b.expect->decision && a.expect->rule == b.expect->rule)) &&
         SameTyped(a.output, b.output) && a.error == b.error;
}

}  // namespace

bool SameTrace(const TraceConversation& a, const TraceConversation& b) {
  if (a.conversation != b.conversation || a.domain != b.domain || !SameTyped(a.origin, b.origin) ||
      a.events.size() != b.events.size()) {
    return false;
  }
  for (size_t i = 0; i < a.events.size(); ++i) {
    if (!SameEvent(a.events[i], b.events[i])) return false;
  }
  return true;
}

}  // namespace taskledger::trace_internal
