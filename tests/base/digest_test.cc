// ArgsHash writes the canonical JSON text directly instead of dumping
// CanonicalValue's copy; both must give the same bytes, because args hashes
// and read digests are stored in decision records and compared later (a
// digest computed today must match one stored by an earlier version). Checked
// against the reference form on hand-made edge cases and on every argument
// and output of the retail gold trace.
#include <cmath>
#include <fstream>
#include <limits>
#include <string>

#include <catch2/catch.hpp>

#include "taskledger/base/digest.h"

using nlohmann::json;
using taskledger::ArgsHash;
using taskledger::CanonicalValue;
using taskledger::Sha256Hex;

namespace {

// The definition ArgsHash had before: hash of dump() of the canonical copy.
std::string Reference(const json& v) {
  return Sha256Hex(CanonicalValue(v).dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace

TEST_CASE("ArgsHash: known digests stay what earlier versions stored", "[digest]") {
  // Fixed here so a change of algorithm, not only of path, fails too.
  CHECK(ArgsHash(json::object()) == Sha256Hex("{}"));
  CHECK(ArgsHash({{"b", 2.0}, {"a", "x"}}) == Sha256Hex(R"({"a":"x","b":2})"));
  CHECK(ArgsHash("pending") == Sha256Hex("\"pending\""));
  CHECK(Sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("ArgsHash: same bytes as the canonical copy's dump on edge cases", "[digest]") {
  const double inf = std::numeric_limits<double>::infinity();
  const json cases[] = {
      nullptr,
      true,
      json::object(),
      json::array(),
      {{"nested", {{"empty_obj", json::object()}, {"empty_arr", json::array()}}}},
      2.0,
      -0.0,
      0.5,
      -3.0,
      8.9e15,
      9.0e15,
      1e300,
      inf,
      -inf,
      std::nan(""),
      std::numeric_limits<int64_t>::min(),
      std::numeric_limits<uint64_t>::max(),
      {1.0, 2.5, {3.0, json::array({4.0})}},
      "plain",
      "quote \" backslash \\ newline \n tab \t bell \x07 del \x7f",
      "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
      "bad utf-8 \xff\xfe here \xc3",
      {{"key with \"quote\"", 1},
       {"k\\", 2},
       {"\x01"
        "ctl",
        3},
       {"caf\xc3\xa9", 4.0},
       {"", 5}},
      {{"bad \xff key", {"v"}}},
      json::binary({1, 2, 3}),
      {{"a", {{"b", {{"c", {{"d", {1.0, "e", nullptr, false}}}}}}}}},
  };
  for (const json& v : cases) {
    INFO(v.dump(-1, ' ', false, json::error_handler_t::replace));
    CHECK(ArgsHash(v) == Reference(v));
  }
}

TEST_CASE("ArgsHash: same bytes as the canonical copy's dump on a real trace", "[digest]") {
  std::ifstream in(std::string(TASKLEDGER_SOURCE_DIR) +
                   "/tests/data/tau-bench-retail/retail_gold.jsonl");
  REQUIRE(in);
  std::string line;
  size_t values = 0;
  while (std::getline(in, line)) {
    const json doc = json::parse(line);
    for (const json& e : doc.at("events")) {
      for (const char* field : {"arguments", "output"}) {
        if (!e.contains(field)) continue;
        ++values;
        if (ArgsHash(e[field]) != Reference(e[field])) {
          FAIL("differs on " << e[field].dump());
        }
      }
    }
  }
  CHECK(values > 6000);
}
