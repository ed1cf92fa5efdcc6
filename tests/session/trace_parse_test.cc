// The two trace-line readers (session/src/internal/trace_parse.h) give the
// same result on every line: the simdjson path either declines or builds
// exactly what nlohmann's reader builds, down to the number types (an
// unsigned 5 and a signed 5 compare equal in nlohmann, so values are compared
// type by type: SameTrace). Over every trace in tests/data, the fast path must take
// each line (else it would be dead weight); over hand-made lines at the edges
// of JSON and of the format, ParseTraceLine must answer as the reference
// does, with the same error text.
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "internal/trace_parse.h"
#include "taskledger/base/json_depth.h"
#include "taskledger/session/trace.h"

using taskledger::ParseTraceLine;
using taskledger::TraceConversation;
using taskledger::TraceEvent;
using taskledger::TraceLimits;
namespace ti = taskledger::trace_internal;

namespace {

using ti::SameTrace;

// ParseTraceLine (whichever path it took) against the reference alone.
void CheckAgainstReference(const std::string& line) {
  INFO(line);
  const TraceLimits limits;
  auto got = ParseTraceLine(line, limits);
  auto want = ti::ParseWithNlohmann(line, limits);
  REQUIRE(got.has_value() == want.has_value());
  if (!want.has_value()) {
    CHECK(got.error().ToString() == want.error().ToString());
    // And the fast path declined rather than build something.
    CHECK_FALSE(ti::ParseWithSimdjson(line, limits).has_value());
    return;
  }
  CHECK(SameTrace(*got, *want));
}

std::string Line(const std::string& events) {
  return R"({"conversation":"c","events":[)" + events + "]}";
}

std::string Call(const std::string& arguments) {
  return Line(R"({"type":"call","id":"c1","tool":"t","arguments":)" + arguments + "}");
}

}  // namespace

TEST_CASE("trace parse: the simdjson path takes every line of the shipped traces, exactly",
          "[trace]") {
  size_t lines = 0;
  for (const auto& file : std::filesystem::recursive_directory_iterator(
           std::string(TASKLEDGER_SOURCE_DIR) + "/tests/data")) {
    if (file.path().extension() != ".jsonl") continue;
    std::ifstream in(file.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      INFO(file.path().string() << " line " << lines);
      ++lines;
      auto fast = ti::ParseWithSimdjson(line, TraceLimits{});
      auto want = ti::ParseWithNlohmann(line, TraceLimits{});
      REQUIRE(want.has_value());
      REQUIRE(fast.has_value());
      REQUIRE(SameTrace(*fast, *want));
    }
  }
  CHECK(lines > 1000);
}

TEST_CASE("trace parse: numbers read as nlohmann reads them", "[trace]") {
  for (const char* args : {
           R"({"n":0})",
           R"({"n":-0})",
           R"({"n":[ -0 ]})",
           R"({"n":-0.0})",
           R"({"n":-0e3})",
           R"({"n":1e-400})",
           R"({"n":-1e-400})",
           R"({"n":1e400})",
           R"({"n":-1e400})",
           R"({"n":5})",
           R"({"n":-5})",
           R"({"n":9223372036854775807})",
           R"({"n":9223372036854775808})",
           R"({"n":18446744073709551615})",
           R"({"n":18446744073709551616})",
           R"({"n":-9223372036854775808})",
           R"({"n":-9223372036854775809})",
           R"({"n":123456789012345678901234567890})",
           R"({"n":0.1})",
           R"({"n":2.2250738585072011e-308})",
           R"({"n":4.9e-324})",
           R"({"n":1.7976931348623157e308})",
           R"({"n":1E+2})",
           R"({"n":01})",
           R"({"n":1.})",
           R"({"n":.5})",
           R"({"n":-})",
           R"({"date":"2024-01-05","n":-0})",
       }) {
    CheckAgainstReference(Call(args));
  }
}

TEST_CASE("trace parse: strings and structure read as nlohmann reads them", "[trace]") {
  for (const std::string& args : {
           std::string(R"({"s":"\u00e9\u20ac\ud83d\ude00"})"),
           std::string(R"({"s":"\u0000 nul"})"),
           std::string(R"({"s":"\ud800"})"),
           std::string(R"({"s":"\udc00"})"),
           std::string(R"({"s":"\ud800\u0041"})"),
           std::string(R"({"s":"\/\b\f\n\r\t\"\\"})"),
           std::string(R"({"s":"\x"})"),
           std::string("{\"s\":\"ctl \x01\"}"),
           std::string("{\"s\":\"del \x7f\"}"),
           std::string("{\"s\":\"bad \xff utf-8\"}"),
           std::string("{\"s\":\"cut \xc3\"}"),
           std::string(R"({"a":1,"a":2})"),
           std::string(R"({"a":{"x":1},"a":[2]})"),
           std::string(R"({"b":1,"a":2,"c":{"z":0,"y":[]}})"),
           std::string(R"({"a":[1,]})"),
           std::string(R"({"a":tru})"),
           std::string(R"([1])"),
           std::string(R"(null)"),
           std::string(R"("text")"),
       }) {
    CheckAgainstReference(Call(args));
  }
  CheckAgainstReference("\xEF\xBB\xBF" + Call("{}"));
  CheckAgainstReference(Call("{}") + " x");
  CheckAgainstReference(Call("{}") + "  ");
  CheckAgainstReference(Call("{}") + "{}");
}

TEST_CASE("trace parse: the format's checks agree, duplicates keep the last", "[trace]") {
  for (const std::string& line : {
           Line(R"({"type":"user","text":"hi"})"),
           Line(R"({"type":"user","text":5})"),
           Line(R"({"type":"user"})"),
           Line(R"({"type":"user","text":"a","type":"call","id":"c","tool":"t"})"),
           Line(R"({"type":"call","id":"c","tool":"t","type":"user","text":"x"})"),
           Line(R"({"type":"call","id":"","tool":"t"})"),
           Line(R"({"type":"call","id":"c","tool":7})"),
           Line(R"({"type":"call","id":"c","tool":"t","arguments":null})"),
           Line(R"({"type":"call","id":"c","tool":"t","arguments":[1]})"),
           Line(R"({"type":"call","id":"c","tool":"t","arguments":{"a":1},"arguments":null})"),
           Line(R"({"type":"call","id":"c","tool":"t","writes":null})"),
           Line(R"({"type":"call","id":"c","tool":"t","writes":true})"),
           Line(R"({"type":"call","id":"c","tool":"t","writes":"yes"})"),
           Line(R"({"type":"call","id":"c","tool":"t","expect":null})"),
           Line(R"({"type":"call","id":"c","tool":"t","expect":{"decision":"deny","rule":"r"}})"),
           Line(R"({"type":"call","id":"c","tool":"t","expect":{"decision":"deny","rule":null}})"),
           Line(R"({"type":"call","id":"c","tool":"t","expect":{"decision":"maybe"}})"),
           Line(R"({"type":"call","id":"c","tool":"t","expect":{"rule":"r"}})"),
           Line(R"({"type":"call","id":"c","tool":"t","expect":{"decision":"deny","rule":3}})"),
           Line(R"({"type":"call","id":"c","tool":"t","expect":"deny"})"),
           Line(R"({"type":"result","id":"c"})"),
           Line(R"({"type":"result","id":"c","output":null,"error":null})"),
           Line(R"({"type":"result","id":"c","output":"text","error":true})"),
           Line(R"({"type":"result","id":"c","output":{"a":[1,2.5,"x"]},"error":"no"})"),
           Line(R"({"type":"result","output":1})"),
           Line(R"({"type":"other"})"),
           Line(R"({"type":1})"),
           Line(R"([])"),
           Line(R"("call")"),
           std::string(R"({"conversation":"","events":[]})"),
           std::string(R"({"conversation":1,"events":[]})"),
           std::string(R"({"events":[]})"),
           std::string(R"({"conversation":"c"})"),
           std::string(R"({"conversation":"c","events":{}})"),
           std::string(R"({"conversation":"c","domain":null,"events":[]})"),
           std::string(R"({"conversation":"c","domain":3,"events":[]})"),
           std::string(R"({"conversation":"c","origin":null,"events":[]})"),
           std::string(R"({"conversation":"c","origin":{"k":[1,-2,3.5]},"events":[]})"),
           std::string(R"({"conversation":"a","conversation":"b","events":[],"events":[1]})"),
           std::string(R"([{"conversation":"c","events":[]}])"),
       }) {
    CheckAgainstReference(line);
  }
}

TEST_CASE("trace parse: the event limit holds on both paths", "[trace]") {
  TraceLimits tight;
  tight.max_events = 2;
  const std::string three =
      Line(R"({"type":"user","text":"a"},{"type":"user","text":"b"},{"type":"user","text":"c"})");
  CHECK_FALSE(ti::ParseWithSimdjson(three, tight).has_value());
  auto parsed = ParseTraceLine(three, tight);
  REQUIRE_FALSE(parsed.has_value());
  CHECK(parsed.error().ToString() == ti::ParseWithNlohmann(three, tight).error().ToString());
}

TEST_CASE("trace parse: the depth limit holds on both paths, at and around the limit", "[trace]") {
  // The fast path relies on simdjson's own depth limit instead of a separate
  // pass: a line one level too deep must still be refused with the depth
  // error, and a line at the limit read as the reference reads it.
  for (int max_depth : {4, 5, 8, taskledger::kDefaultMaxJsonDepth}) {
    TraceLimits limits;
    limits.max_depth = max_depth;
    // Call() wraps the arguments 4 levels deep (line, events, event, arguments).
    for (int depth = 4; depth <= max_depth + 3; ++depth) {
      std::string arguments = "1";
      for (int d = 4; d < depth; ++d)
        arguments = (d % 2 == 0 ? "[" : "{\"k\":") + arguments + (d % 2 == 0 ? "]" : "}");
      arguments = "{\"a\":" + arguments + "}";
      const std::string line = Call(arguments);
      INFO("max_depth " << max_depth << ", line " << line);
      auto got = ParseTraceLine(line, limits);
      if (taskledger::JsonNestsDeeperThan(line, max_depth)) {
        REQUIRE_FALSE(got.has_value());
        CHECK(got.error().ToString() ==
              "limit exceeded: JSON nested deeper than " + std::to_string(max_depth));
        CHECK_FALSE(ti::ParseWithSimdjson(line, limits).has_value());
      } else {
        auto want = ti::ParseWithNlohmann(line, limits);
        REQUIRE(want.has_value());
        REQUIRE(got.has_value());
        CHECK(SameTrace(*got, *want));
      }
    }
  }
  // The deep line first, then a shallow one on the same thread's parser, and
  // back: the parser's depth setting follows the limits of each call.
  TraceLimits shallow;
  shallow.max_depth = 4;
  const std::string deep = Call(R"({"a":[[[1]]]})");
  CHECK_FALSE(ParseTraceLine(deep, shallow).has_value());
  CHECK(ParseTraceLine(deep, TraceLimits{}).has_value());
  CHECK_FALSE(ParseTraceLine(deep, shallow).has_value());
}
