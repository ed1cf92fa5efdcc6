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
#include <utility>

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

TEST_CASE("Sha256Hex: the FIPS 180-4 test vectors, across block boundaries", "[digest]") {
  // On x86-64 machines with the SHA extensions these run on them; the
  // portable compression is the same function on the others.
  CHECK(Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(Sha256Hex(
            "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmn"
            "opqrlmnopqrsmnopqrstnopqrstu") ==
        "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  CHECK(Sha256Hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Lengths around the padding edges (55/56/63/64/119/120 bytes), against
  // digests of the same texts computed by Python's hashlib.
  const std::pair<size_t, const char*> edges[] = {
      {55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"},
      {56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"},
      {63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"},
      {64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"},
      {119, "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c"},
      {120, "13f05a0b594787f5ecd315edc96141bd3243203d1b7d4f0836f37308b276ba98"},
      {128, "24da1b81d0b16df6428eee73c69fcb2a93c76bc6df706f0c6670fe6bfe800464"},
  };
  for (const auto& [n, digest] : edges) CHECK(Sha256Hex(std::string(n, 'x')) == digest);
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
