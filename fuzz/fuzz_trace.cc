// Fuzz target: trace parsing (ParseTraceLine, docs/trace-format.md), with the
// default limits and with tight ones so the limit paths run as well.
// Properties: nothing throws or crashes; a parsed line encodes to one line
// (no newline) that parses again to the same conversation (compared through
// a second encoding), and the tight limits are honoured. Differential: on
// every line that passes ParseTraceLine's size, blankness and depth checks,
// the simdjson reader either declines or builds exactly what the nlohmann
// reference builds (SameTrace: number types too), and never accepts a line
// the reference refuses.
#include <string>

#include "fuzz_support.h"
#include "internal/trace_parse.h"
#include "taskledger/base/json_depth.h"
#include "taskledger/session/trace.h"

namespace {

// The two readers of session/src/internal/trace_parse.h on one line, run
// only behind the checks ParseTraceLine makes before either of them.
void CheckReadersAgree(std::string_view line, const taskledger::TraceLimits& limits) {
  using namespace taskledger;
  if (line.size() > limits.max_line_bytes ||
      line.find_first_not_of(" \t\r\n") == std::string_view::npos ||
      JsonNestsDeeperThan(line, limits.max_depth)) {
    return;
  }
  auto fast = trace_internal::ParseWithSimdjson(line, limits);
  if (!fast) return;
  auto reference = trace_internal::ParseWithNlohmann(line, limits);
  TL_FUZZ_CHECK(reference.has_value(), "the simdjson reader took a line the reference refuses: " +
                                           reference.status().ToString());
  TL_FUZZ_CHECK(trace_internal::SameTrace(*fast, reference.value()),
                "the simdjson reader and the reference read a line differently");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace taskledger;
  using namespace taskledger::fuzz;
  const std::string_view line = AsView(data, size);

  CheckReadersAgree(line, TraceLimits{});
  auto parsed = ParseTraceLine(line);
  if (parsed.has_value()) {
    const std::string encoded = EncodeTraceLine(parsed.value());
    TL_FUZZ_CHECK(encoded.find('\n') == std::string::npos, "an encoded trace line holds a newline");
    auto again = ParseTraceLine(encoded);
    TL_FUZZ_CHECK(again.has_value(),
                  "an encoded line does not parse: " + again.status().ToString());
    TL_FUZZ_CHECK(EncodeTraceLine(again.value()) == encoded,
                  "trace line changed through a round trip");
  }

  TraceLimits tight;
  tight.max_line_bytes = 512;
  tight.max_depth = 4;
  tight.max_events = 3;
  CheckReadersAgree(line, tight);
  auto limited = ParseTraceLine(line, tight);
  if (limited.has_value()) {
    TL_FUZZ_CHECK(size <= tight.max_line_bytes, "a line over max_line_bytes was accepted");
    TL_FUZZ_CHECK(limited.value().events.size() <= tight.max_events, "more events than max_events");
  }
  return 0;
}
