// JsonNestsDeeperThan (taskledger/json_depth.h), the guard run before any
// untrusted JSON text is parsed: exact at the limit, blind to brackets inside
// strings (escaped quotes included), and linear on 100,000 nested brackets.
#include <catch2/catch.hpp>

#include <string>

#include "taskledger/json_depth.h"

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
