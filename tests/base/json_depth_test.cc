// JsonNestsDeeperThan (taskledger/base/json_depth.h), the guard run before any
// untrusted JSON text is parsed: exact at the limit, blind to brackets inside
// strings (escaped quotes included), the same wherever in the text a string
// or an escape falls, and linear on 100,000 nested brackets.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "taskledger/base/json_depth.h"

using taskledger::JsonNestsDeeperThan;

TEST_CASE("json depth: the limit itself passes, one more level does not", "[json_depth]") {
  CHECK_FALSE(JsonNestsDeeperThan(R"({"a":[{"b":1}]})", 3));
  CHECK(JsonNestsDeeperThan(R"({"a":[{"b":[1]}]})", 3));
  CHECK_FALSE(JsonNestsDeeperThan("[[],[],[]]", 2));
  CHECK_FALSE(JsonNestsDeeperThan("plain text", 0));
}

TEST_CASE("json depth: brackets inside strings do not count", "[json_depth]") {
  CHECK_FALSE(JsonNestsDeeperThan(R"({"note":"[[[[{{{{"})", 1));
  // An escaped quote does not end the string; an escaped backslash does not
  // escape the quote after it.
  CHECK_FALSE(JsonNestsDeeperThan(R"({"q":"say \"[[[\" now"})", 1));
  CHECK(JsonNestsDeeperThan(R"({"q":"dir\\"}[[[)", 2));
}

TEST_CASE("json depth: 100,000 nested brackets are answered without recursion", "[json_depth]") {
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  CHECK(JsonNestsDeeperThan(deep, 64));
  CHECK_FALSE(JsonNestsDeeperThan(deep, 100000));
}

TEST_CASE("json depth: strings and escapes read the same at every offset", "[json_depth]") {
  // The scan reads long texts in blocks; move each case across block edges.
  for (size_t pad = 0; pad < 40; ++pad) {
    for (size_t len = 0; len < 20; ++len) {
      INFO("pad " << pad << ", string length " << len);
      const std::string lead = std::string(pad, ' ') + R"({"s":")" + std::string(len, 'x');
      CHECK_FALSE(JsonNestsDeeperThan(lead + R"(\"[[[ {{"})", 1));  // escaped quote
      CHECK(JsonNestsDeeperThan(lead + R"(\\"}[[[)", 2));           // escaped backslash
      CHECK_FALSE(JsonNestsDeeperThan(lead + R"(\\"}[[[)", 3));
      CHECK_FALSE(JsonNestsDeeperThan(lead + "[[[[", 1));  // unterminated string
    }
  }
}

// What the guard must answer, read one byte at a time.
bool ReferenceDeeperThan(const std::string& text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

TEST_CASE("json depth: agrees with a byte-at-a-time reading on random texts", "[json_depth]") {
  // Texts of quotes, brackets and other bytes (ASCII or not) in runs long
  // enough to span several blocks; backslashes never, rarely or often, since
  // the scan reads blocks without them differently.
  const std::string plain = "\"[]{}|a \xdb";
  std::mt19937 rng(20240611);
  for (int round = 0; round < 6000; ++round) {
    const int backslash_one_in = round % 3 == 0 ? 0 : round % 3 == 1 ? 40 : 4;
    std::string text(rng() % 200, ' ');
    for (char& c : text) {
      bool backslash = backslash_one_in != 0 && rng() % backslash_one_in == 0;
      c = backslash ? '\\' : plain[rng() % plain.size()];
    }
    const int limit = static_cast<int>(round % 2 == 0 ? rng() % 4 : rng() % 64);
    INFO("text '" << text << "', limit " << limit);
    REQUIRE(JsonNestsDeeperThan(text, limit) == ReferenceDeeperThan(text, limit));
  }
}
