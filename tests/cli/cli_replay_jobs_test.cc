// `taskledger replay --jobs N` as a user sees it: the output (decision lines,
// the --json summary, stderr lines with file:line, the exit code) is that of
// --jobs 1 whatever N, in input order; lines that repeat a conversation id
// keep their serial meaning (the later one is skipped); --jobs takes a
// positive number only. Runs the built binary; label `threads` (the TSan
// build runs it against a TSan-built binary).
#include <catch2/catch.hpp>

#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"

using namespace taskledger::testing;

namespace {

const std::string kSource = TASKLEDGER_SOURCE_DIR;
const std::string kRetail = kSource + "/rules/retail";
const std::string kGold = kSource + "/tests/data/tau-bench-retail/retail_gold.jsonl";
const std::string kViolations = kSource + "/tests/data/tau-bench-retail/retail_violations.jsonl";

std::string Pack() {
  static const std::string dir = WriteShopPack(TempDir() + "/shop");
  return dir;
}

// The output with what depends on timing masked: events_per_s, seconds.
std::string Masked(const std::string& text) {
  static const std::regex timing(
      R"re(("events_per_s":|"seconds":)[0-9.e+-]+|\([0-9]+ events/s\))re");
  return std::regex_replace(text, timing, "$1#");
}

// The conversation of each decision line of a --json replay, in output order.
std::vector<std::string> ConversationsInOrder(const std::string& out) {
  std::vector<std::string> order;
  // A decision line (keys sorted: "call_id" first) names its conversation.
  static const std::regex conversation(R"re(^\{"call_id":.*"conversation":"([^"]+)")re");
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    std::smatch m;
    const std::string line = out.substr(start, end - start);
    if (std::regex_search(line, m, conversation) && (order.empty() || order.back() != m[1].str())) {
      order.push_back(m[1].str());
    }
    start = end + 1;
  }
  return order;
}

// The conversation ids of a trace file, in line order.
std::vector<std::string> ConversationsOfFile(const std::string& path) {
  std::vector<std::string> ids;
  static const std::regex id(R"re("conversation"\s*:\s*"([^"]+)")re");
  std::string text = ReadFile(path);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::smatch m;
    const std::string line = text.substr(start, end - start);
    if (std::regex_search(line, m, id)) ids.push_back(m[1].str());
    start = end + 1;
  }
  return ids;
}

void CheckSameAsSerial(const std::vector<std::string>& args) {
  std::vector<std::string> serial_args = args;
  serial_args.insert(serial_args.end(), {"--jobs", "1"});
  CliRun serial = RunCli(serial_args);
  for (const char* jobs : {"2", "3", "8"}) {
    std::vector<std::string> parallel_args = args;
    parallel_args.insert(parallel_args.end(), {"--jobs", jobs});
    CliRun parallel = RunCli(parallel_args);
    INFO("--jobs " << jobs << ": " << parallel.err);
    CHECK(parallel.exit_code == serial.exit_code);
    CHECK(Masked(parallel.out) == Masked(serial.out));
    CHECK(parallel.err == serial.err);
  }
}

}  // namespace

TEST_CASE("replay --jobs N prints the gold and violations replays exactly as --jobs 1") {
  CheckSameAsSerial({"replay", kGold, "--rules", kRetail, "--json"});
  CheckSameAsSerial({"replay", kGold, "--rules", kRetail});
  CheckSameAsSerial({"replay", kViolations, "--rules", kRetail, "--json"});
  CheckSameAsSerial({"replay", kViolations, "--rules", kRetail, "-q"});
}

TEST_CASE("replay --jobs 4 prints the conversations in the order of the trace lines") {
  CliRun r = RunCli({"replay", kGold, "--rules", kRetail, "--json", "--jobs", "4"});
  REQUIRE(r.exit_code == 0);
  const std::vector<std::string> printed = ConversationsInOrder(r.out);
  const std::vector<std::string> lines = ConversationsOfFile(kGold);
  REQUIRE(printed.size() > 400);  // nearly every gold conversation has a gated call
  // Each printed conversation comes after the one printed before it in the file.
  size_t at = 0;
  for (const std::string& c : printed) {
    while (at < lines.size() && lines[at] != c) ++at;
    INFO(c);
    REQUIRE(at < lines.size());
  }
  CHECK(r.LastJson()["conversations"] == lines.size());
}

TEST_CASE("replay --jobs: a conversation id repeated across files is replayed once, serially") {
  // The violations trace twice: every line of the second copy names a
  // conversation the first copy already replayed, so it is skipped (exit 2)
  // whichever worker gets it first.
  std::vector<std::string> args = {"replay",  kViolations, kViolations,
                                   "--rules", kRetail,     "--json"};
  CheckSameAsSerial(args);
  // Each of 80 gold lines twice in a row: the copies would run at the same
  // time on two workers if the second did not wait for the first.
  std::string doubled;
  {
    std::string text = ReadFile(kGold);
    size_t start = 0;
    for (int i = 0; i < 80 && start < text.size(); ++i) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      doubled += text.substr(start, end - start) + "\n" + text.substr(start, end - start) + "\n";
      start = end + 1;
    }
  }
  const std::string twice = TempDir() + "/gold-twice.jsonl";
  WriteFile(twice, doubled);
  CheckSameAsSerial({"replay", twice, "--rules", kRetail, "--json"});
  CliRun pairs = RunCli({"replay", twice, "--rules", kRetail, "--json", "--jobs", "2"});
  CHECK(pairs.LastJson()["conversations"] == 80);
  CHECK(pairs.LastJson()["failed_conversations"] == 80);

  args.insert(args.end(), {"--jobs", "4"});
  CliRun r = RunCli(args);
  CHECK(r.exit_code == 2);
  const size_t lines = ConversationsOfFile(kViolations).size();
  CHECK(r.LastJson()["conversations"] == lines);
  CHECK(r.LastJson()["failed_conversations"] == lines);
  CHECK_THAT(r.err, Catch::Contains(kViolations + ":1: conversation ") &&
                        Catch::Contains("already has turns in the store; skipped"));
}

TEST_CASE("replay --jobs: failed conversations give exit 2 with file:line, --strict stops there") {
  std::string trace = TempDir() + "/jobs-bad.jsonl";
  std::string text;
  for (int i = 0; i < 12; ++i) text += ShopTraceLine("c" + std::to_string(i)) + "\n";
  text += "{not json\n";
  for (int i = 12; i < 24; ++i) text += ShopTraceLine("c" + std::to_string(i)) + "\n";
  text += ShopTraceLine("c3") + "\n";  // a repeated id: skipped, a failed conversation
  WriteFile(trace, text);
  CheckSameAsSerial({"replay", trace, "--rules", Pack(), "--json"});
  CheckSameAsSerial({"replay", trace, "--rules", Pack(), "--strict"});

  CliRun r = RunCli({"replay", trace, "--rules", Pack(), "--json", "--jobs", "3"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(trace + ":13:"));
  CHECK_THAT(r.err, Catch::Contains(trace + ":26: conversation c3 already has turns"));
  CHECK(r.LastJson()["conversations"] == 24);
  CHECK(r.LastJson()["failed_conversations"] == 2);
  CHECK(RunCli({"replay", trace, "--rules", Pack(), "--jobs", "3", "--allow-unreadable", "-q"})
            .exit_code == 0);

  CliRun strict = RunCli({"replay", trace, "--rules", Pack(), "--strict", "--jobs", "3"});
  CHECK(strict.exit_code == 2);
  CHECK_THAT(strict.err, Catch::Contains(trace + ":13:"));
  CHECK_THAT(strict.out, Catch::Contains("c11 "));   // the lines before it were printed
  CHECK_THAT(strict.out, !Catch::Contains("c12 "));  // nothing after it
  CHECK_THAT(strict.out, !Catch::Contains("conversations:"));
}

TEST_CASE("replay --jobs takes a positive number of threads only") {
  std::string trace = TempDir() + "/jobs-one.jsonl";
  WriteFile(trace, ShopTraceLine("a") + "\n");
  for (const char* bad : {"0", "-1", "two", "1.5", ""}) {
    CliRun r = RunCli({"replay", trace, "--rules", Pack(), "--jobs", bad});
    INFO("--jobs '" << bad << "': " << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--jobs"));
    CHECK(r.out.empty());
  }
  CHECK(RunCli({"replay", trace, "--rules", Pack(), "--jobs", "1"}).exit_code == 0);
  CHECK(RunCli({"replay", trace, "--rules", Pack()}).exit_code == 0);  // default: hardware threads
  CHECK_THAT(RunCli({"replay", "--help"}).out, Catch::Contains("--jobs"));
}

TEST_CASE("replay --jobs: a line a worker cannot parse is reported with its own file:line") {
  // The workers parse the lines: each error must still name its file and
  // line (blank lines counted), in input order, as --jobs 1 does.
  const std::string first = TempDir() + "/jobs-parse-a.jsonl";
  const std::string second = TempDir() + "/jobs-parse-b.jsonl";
  std::string a;
  for (int i = 0; i < 5; ++i) a += ShopTraceLine("a" + std::to_string(i)) + "\n";
  a += "{\"conversation\":\"a5\",\"events\":5}\n";  // line 6: events is not a list
  a += "\n";                                        // line 7: blank, skipped
  a += "[1,2]\n";                                   // line 8: not an object
  for (int i = 9; i < 20; ++i) a += ShopTraceLine("a" + std::to_string(i)) + "\n";
  WriteFile(first, a);
  WriteFile(second, "{bad\n" + ShopTraceLine("b1") + "\n");
  const std::vector<std::string> args = {"replay", first, second, "--rules", Pack(), "--json"};
  CheckSameAsSerial(args);

  std::vector<std::string> parallel = args;
  parallel.insert(parallel.end(), {"--jobs", "3"});
  CliRun r = RunCli(parallel);
  CHECK(r.exit_code == 2);
  // The "FILE:LINE: " each stderr line starts with, in order.
  std::vector<std::string> places;
  static const std::regex place(R"re(^(/[^:]+:[0-9]+): )re");
  size_t start = 0;
  while (start < r.err.size()) {
    size_t end = r.err.find('\n', start);
    if (end == std::string::npos) end = r.err.size();
    std::smatch m;
    const std::string line = r.err.substr(start, end - start);
    if (std::regex_search(line, m, place)) places.push_back(m[1].str());
    start = end + 1;
  }
  CHECK(places == std::vector<std::string>{first + ":6", first + ":8", second + ":1"});
  CHECK(r.LastJson()["conversations"] == 17);  // the readable lines
  CHECK(r.LastJson()["failed_conversations"] == 3);

  parallel.push_back("--strict");
  CliRun strict = RunCli(parallel);
  CHECK(strict.exit_code == 2);
  CHECK_THAT(strict.err, Catch::StartsWith(first + ":6: "));
  CHECK_THAT(strict.err, !Catch::Contains(":8: "));
  CHECK_THAT(strict.out, Catch::Contains("\"a4\""));   // the lines before it were printed
  CHECK_THAT(strict.out, !Catch::Contains("\"a9\""));  // nothing after it
}

TEST_CASE("replay --json decision lines are exactly nlohmann's dump of themselves") {
  // The decision lines are written without building a json object: each must
  // be the bytes nlohmann's dump gives (sorted keys, its escaping), for
  // labels, rule errors, and ids that need escaping or are not ASCII.
  const std::string broken = [] {
    std::string d = WriteShopPack(TempDir() + "/jobs-broken");
    std::string lua = ReadFile(d + "/shop.lua");
    const std::string good = "if ledger.confirmed(call) then return allow() end";
    REQUIRE(lua.find(good) != std::string::npos);
    lua.replace(lua.find(good), good.size(), "if ledger.nope(call) then return allow() end");
    WriteFile(d + "/shop.lua", lua);
    return d;
  }();
  std::string text;
  for (const std::string& id :
       {std::string("plain"), std::string("quote\\\"d"), std::string("back\\\\slash"),
        std::string("tab\\tand\\u0001"), std::string("caf\u00e9 \u2028 \U0001F600"),
        std::string("del\x7f")}) {
    text += ShopTraceLine(id) + "\n";
  }
  const std::string trace = TempDir() + "/jobs-escapes.jsonl";
  WriteFile(trace, text);
  size_t lines = 0;
  size_t with_errors = 0;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"replay", trace, "--rules", Pack(), "--json"},
        std::vector<std::string>{"replay", trace, "--rules", broken, "--json"},
        std::vector<std::string>{"replay", kViolations, "--rules", kRetail, "--json"}}) {
    CliRun r = RunCli(args);
    size_t start = 0;
    while (start < r.out.size()) {
      size_t end = r.out.find('\n', start);
      if (end == std::string::npos) end = r.out.size();
      const std::string line = r.out.substr(start, end - start);
      start = end + 1;
      if (line.rfind("{\"call_id\":", 0) != 0) continue;  // the summary
      ++lines;
      const nlohmann::json parsed = nlohmann::json::parse(line);
      INFO(line);
      CHECK(parsed.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) == line);
      if (parsed.contains("errored_rules")) ++with_errors;
    }
  }
  CHECK(lines > 300);
  CHECK(with_errors >= 6);  // every cancel of the broken pack
}
