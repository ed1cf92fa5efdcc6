// Fuzz target: trace parsing (ParseTraceLine, docs/trace-format.md), with the
// default limits and with tight ones so the limit paths run as well.
// Properties: nothing throws or crashes; a parsed line encodes to one line
// (no newline) that parses again to the same conversation (compared through
// a second encoding), and the tight limits are honoured.
#include <string>

#include "fuzz_support.h"
#include "taskledger/session/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace taskledger;
  using namespace taskledger::fuzz;
  const std::string_view line = AsView(data, size);

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
  auto limited = ParseTraceLine(line, tight);
  if (limited.has_value()) {
    TL_FUZZ_CHECK(size <= tight.max_line_bytes, "a line over max_line_bytes was accepted");
    TL_FUZZ_CHECK(limited.value().events.size() <= tight.max_events, "more events than max_events");
  }
  return 0;
}
