// Shared by the libFuzzer targets in this folder: turning fuzz bytes into
// views and checking properties (a failed property aborts, which libFuzzer
// reports as a crash with the input saved). Single-threaded, like libFuzzer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

namespace taskledger::fuzz {

inline std::string_view AsView(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits `input` at its first newline: {first line, rest}; no newline gives
// {input, ""}. Targets use the first line as a name (tool, file path) so that
// seeds stay readable.
inline std::pair<std::string_view, std::string_view> SplitFirstLine(std::string_view input) {
  const size_t nl = input.find('\n');
  if (nl == std::string_view::npos) return {input, {}};
  return {input.substr(0, nl), input.substr(nl + 1)};
}

[[noreturn]] inline void PropertyFailed(const char* file, int line, const char* expr,
                                        const std::string& detail) {
  std::fprintf(stderr, "%s:%d: property violated: %s\n  %s\n", file, line, expr, detail.c_str());
  std::abort();
}

// A property of the code under test. Unlike assert() it stays on in release
// builds: the fuzzers are built RelWithDebInfo.
#define TL_FUZZ_CHECK(cond, detail)                                                       \
  do {                                                                                    \
    if (!(cond)) ::taskledger::fuzz::PropertyFailed(__FILE__, __LINE__, #cond, (detail)); \
  } while (0)

}  // namespace taskledger::fuzz
