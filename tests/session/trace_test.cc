// Tests of the trace reader: what a replay sees of a trace file, and that bad
// input of every kind becomes an error value with a line number, never a crash.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "taskledger/session/trace.h"
#include "taskledger/session/trace_reader.h"

using taskledger::StatusCode;
using namespace taskledger;

namespace {

std::string TempPath(const std::string& name) {
  return std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/tl_trace_" +
         std::to_string(::getpid()) + "_" + name;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

constexpr const char* kGood =
    R"({"conversation":"c1","domain":"retail","origin":{"kind":"gold"},"events":[)"
    R"({"type":"user","text":"my email is a@b.co"},)"
    R"({"type":"call","id":"c0","tool":"find_user_id_by_email","arguments":{"email":"a@b.co"},"writes":false},)"
    R"({"type":"result","id":"c0","output":"ann_lee_1","error":false},)"
    R"({"type":"call","id":"c1","tool":"cancel_pending_order","arguments":{"order_id":"#W1"},"writes":true,)"
    R"("expect":{"decision":"deny","rule":"retail.auth_before_action"}}]})";

}  // namespace

TEST_CASE("a trace line parses into its events in order") {
  auto c = ParseTraceLine(kGood);
  REQUIRE(c.has_value());
  CHECK(c->conversation == "c1");
  CHECK(c->domain == "retail");
  CHECK(c->origin["kind"] == "gold");
  REQUIRE(c->events.size() == 4);
  CHECK(c->events[0].type == TraceEventType::kUser);
  CHECK(c->events[0].text == "my email is a@b.co");
  CHECK(c->events[1].tool == "find_user_id_by_email");
  CHECK(c->events[1].arguments["email"] == "a@b.co");
  CHECK_FALSE(c->events[1].writes);
  CHECK_FALSE(c->events[1].expect.has_value());
  CHECK(c->events[2].type == TraceEventType::kResult);
  CHECK(c->events[2].output == "ann_lee_1");
  CHECK(c->events[3].writes);
  REQUIRE(c->events[3].expect.has_value());
  CHECK(c->events[3].expect->decision == "deny");
  CHECK(c->events[3].expect->rule == "retail.auth_before_action");
}

TEST_CASE("encoding a conversation and parsing it back gives the same conversation") {
  auto c = ParseTraceLine(kGood);
  REQUIRE(c.has_value());
  auto again = ParseTraceLine(EncodeTraceLine(*c));
  REQUIRE(again.has_value());
  CHECK(EncodeTraceLine(*again) == EncodeTraceLine(*c));
  CHECK(again->events.size() == c->events.size());
}

TEST_CASE("malformed trace lines are errors naming what is wrong") {
  struct Case {
    const char* line;
    const char* mentions;
  };
  const Case cases[] = {
      {"{", "invalid JSON"},
      {"[]", "JSON object"},
      {R"({"events":[]})", "conversation"},
      {R"({"conversation":"x"})", "events"},
      {R"({"conversation":"x","events":[{"type":"shout"}]})", "unknown type"},
      {R"({"conversation":"x","events":[{"type":"call","id":"c0"}]})", "tool"},
      {R"({"conversation":"x","events":[{"type":"call","id":"c0","tool":"t","arguments":[1]}]})",
       "arguments"},
      {R"({"conversation":"x","events":[{"type":"call","id":"c0","tool":"t","writes":"yes"}]})",
       "writes"},
      {R"({"conversation":"x","events":[{"type":"call","id":"c0","tool":"t","expect":{"decision":"maybe"}}]})",
       "maybe"},
      {R"({"conversation":"x","events":[{"type":"user"}]})", "text"},
      {R"({"conversation":"x","events":[1]})", "event 0"},
      {"{\"conversation\":\"\xff\",\"events\":[]}", "invalid JSON"},
  };
  for (const Case& c : cases) {
    INFO(c.line);
    auto r = ParseTraceLine(c.line);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(r.error().message(), Catch::Contains(c.mentions));
  }
}

TEST_CASE("nesting, size and event-count limits are enforced before building anything") {
  std::string deep = R"({"conversation":"x","events":[{"type":"result","id":"c","output":)";
  deep += std::string(100000, '[') + std::string(100000, ']') + "}]}";
  auto r = ParseTraceLine(deep);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().code() == StatusCode::kLimitExceeded);

  // Brackets inside strings do not count as nesting.
  std::string brackets = R"({"conversation":"x","events":[{"type":"user","text":")" +
                         std::string(500, '[') + R"("}]})";
  CHECK(ParseTraceLine(brackets).has_value());

  TraceLimits small;
  small.max_line_bytes = 64;
  CHECK(ParseTraceLine(kGood, small).error().code() == StatusCode::kLimitExceeded);
  TraceLimits few;
  few.max_events = 3;
  CHECK(ParseTraceLine(kGood, few).error().code() == StatusCode::kLimitExceeded);
}

TEST_CASE("the reader reports bad lines by number and goes on") {
  std::string path = TempPath("mixed.jsonl");
  // Line 2 is blank (ignored), 3 is not JSON, 4 ends in CRLF, 5 is junk, 6 has no final newline.
  WriteFile(path, std::string(kGood) + "\n\nnot json\r\n" + kGood + "\r\n" + std::string(200, 'x') +
                      "\n" + kGood);
  auto reader = TraceReader::Open(path);
  REQUIRE(reader.has_value());
  std::vector<std::pair<uint64_t, bool>> seen;
  while (auto line = (*reader)->Next())
    seen.emplace_back(line->line, line->conversation.has_value());
  const std::vector<std::pair<uint64_t, bool>> want = {
      {1, true}, {3, false}, {4, true}, {5, false}, {6, true}};
  CHECK(seen == want);
  CHECK((*reader)->bytes_read() == (*reader)->file_size());
  std::remove(path.c_str());
}

TEST_CASE("an over-long line is skipped without buffering and reported as a limit") {
  std::string path = TempPath("long.jsonl");
  WriteFile(path, std::string(1 << 20, 'x') + "\n" + kGood + "\n");
  TraceLimits limits;
  limits.max_line_bytes = 4096;
  auto reader = TraceReader::Open(path, limits);
  REQUIRE(reader.has_value());
  auto first = (*reader)->Next();
  REQUIRE(first.has_value());
  CHECK(first->line == 1);
  REQUIRE_FALSE(first->conversation.has_value());
  CHECK(first->conversation.error().code() == StatusCode::kLimitExceeded);
  auto second = (*reader)->Next();
  REQUIRE(second.has_value());
  CHECK(second->line == 2);
  CHECK(second->conversation.has_value());
  CHECK_FALSE((*reader)->Next().has_value());
  std::remove(path.c_str());
}

TEST_CASE("lines longer than a read block are read whole, up to exactly the limit") {
  std::string path = TempPath("blocks.jsonl");
  // 200,000-byte lines span several of the reader's 64 KiB blocks.
  auto line_of = [](size_t bytes) {
    const std::string head = R"({"conversation":"b","events":[{"type":"user","text":")";
    const std::string tail = R"("}]})";
    return head + std::string(bytes - head.size() - tail.size(), 'y') + tail;
  };
  WriteFile(path, line_of(200'000) + "\n" + line_of(200'001) + "\r\n" + line_of(150'000));
  TraceLimits limits;
  limits.max_line_bytes = 200'000;
  auto reader = TraceReader::Open(path, limits);
  REQUIRE(reader.has_value());
  auto exact = (*reader)->Next();
  REQUIRE(exact.has_value());
  REQUIRE(exact->conversation.has_value());
  CHECK(exact->conversation->events.at(0).text.size() == 200'000 - 57);
  auto over = (*reader)->Next();
  REQUIRE(over.has_value());
  CHECK(over->line == 2);
  REQUIRE_FALSE(over->conversation.has_value());
  CHECK(over->conversation.error().code() == StatusCode::kLimitExceeded);
  auto last = (*reader)->Next();  // no final newline
  REQUIRE(last.has_value());
  CHECK(last->line == 3);
  REQUIRE(last->conversation.has_value());
  CHECK(last->conversation->events.at(0).text == std::string(150'000 - 57, 'y'));
  CHECK_FALSE((*reader)->Next().has_value());
  CHECK((*reader)->bytes_read() == (*reader)->file_size());
  std::remove(path.c_str());
}

TEST_CASE("opening a missing trace is NotFound") {
  auto r = TraceReader::Open("/nonexistent/trace.jsonl");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().code() == StatusCode::kNotFound);
}

TEST_CASE("every line of the shipped corpus parses") {
  for (const char* name : {"retail_gold.jsonl", "retail_violations.jsonl"}) {
    std::string path = std::string(TASKLEDGER_SOURCE_DIR) + "/../shared/corpus/" + name;
    auto reader = TraceReader::Open(path);
    if (!reader.has_value()) {
      WARN("corpus not present at " << path << "; skipped");
      continue;
    }
    size_t ok = 0, bad = 0;
    while (auto line = (*reader)->Next()) (line->conversation.has_value() ? ok : bad)++;
    CHECK(bad == 0);
    CHECK(ok > 500);
  }
}
