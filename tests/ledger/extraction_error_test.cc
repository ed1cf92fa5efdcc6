// The typed extraction-error record (taskledger/ledger/extraction_error.h):
// the records the extractor and the session write, and 0.1-shaped stored
// records, read into the typed form and written back unchanged.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "taskledger/ledger/codec.h"
#include "taskledger/ledger/extraction_error.h"

using namespace taskledger;
using nlohmann::json;

namespace {

// Decodes the stored text, checks it encodes back to the same text, and
// returns the typed record.
ExtractionError RoundTrip(const std::string& stored) {
  const json j = json::parse(stored);
  ExtractionError e = DecodeExtractionError(j);
  CHECK(EncodeExtractionError(e).dump() == j.dump());
  return e;
}

}  // namespace

TEST_CASE("a tool output's extraction error reads into its typed members", "[ledger]") {
  ExtractionError e =
      RoundTrip(R"({"source":"tool","tool":"get_order","call_id":"c1","rule":"order.total",)"
                R"("code":"coercion_failed","message":"'abc' is not a number"})");
  CHECK(e.source == "tool");
  CHECK(e.tool == "get_order");
  CHECK(e.call_id == "c1");
  CHECK(e.rule == "order.total");
  CHECK(e.code == "coercion_failed");
  CHECK(e.message == "'abc' is not a number");
  CHECK(e.extra == json::object());
}

TEST_CASE("absent members stay absent and an empty call id stays present", "[ledger]") {
  ExtractionError user = RoundTrip(R"({"source":"user","code":"too_large","message":"big"})");
  CHECK_FALSE(user.tool.has_value());
  CHECK_FALSE(user.call_id.has_value());
  CHECK_FALSE(user.rule.has_value());
  ExtractionError tool = RoundTrip(
      R"({"source":"tool","tool":"t","call_id":"","code":"malformed_json","message":"x"})");
  REQUIRE(tool.call_id.has_value());
  CHECK(tool.call_id->empty());
  CHECK(EncodeExtractionError(tool).contains("call_id"));
}

TEST_CASE("members this version does not know are kept and written back", "[ledger]") {
  // The session's record of a command it could not settle carries command_key.
  ExtractionError e =
      RoundTrip(R"({"source":"commands","tool":"refund","call_id":"w1","code":"command_unsettled",)"
                R"("command_key":"k-17","message":"store unavailable"})");
  CHECK(e.source == "commands");
  CHECK(e.code == "command_unsettled");
  CHECK(e.extra == json{{"command_key", "k-17"}});
}

TEST_CASE("0.1 records of any shape read back and rewrite unchanged", "[ledger]") {
  // A known member whose value is not a string stays as read.
  ExtractionError odd = RoundTrip(R"({"source":"tool","code":7,"message":null,"rule":["a"]})");
  CHECK(odd.source == "tool");
  CHECK_FALSE(odd.code.has_value());
  CHECK(odd.extra == json{{"code", 7}, {"message", nullptr}, {"rule", {"a"}}});
  // Ledger::StageError took any JSON value in 0.1.
  for (const char* stored : {R"("just text")", "42", "null", "[1,2]", "{}"}) {
    INFO(stored);
    RoundTrip(stored);
  }
}

TEST_CASE("a 0.1 turn's errors read into typed records and back", "[ledger]") {
  const json turn = json::parse(
      R"({"turn":3,"at":1700000000000,"updates":[],)"
      R"("errors":[{"source":"user","rule":"email","code":"missing","message":"no email"},)"
      R"({"source":"tool","tool":"lookup","call_id":"c9","code":"too_deep","message":"deep"}]})");
  auto decoded = DecodeTurn(turn);
  REQUIRE(decoded.has_value());
  REQUIRE(decoded->errors.size() == 2);
  for (const ExtractionError& e : decoded->errors) {
    CHECK(e.code.has_value());
    CHECK(e.extra == json::object());
  }
  CHECK(decoded->errors[0].rule == "email");
  CHECK(decoded->errors[1].call_id == "c9");
  CHECK_FALSE(decoded->errors[1].rule.has_value());
  // Written back, the turn is the one read.
  CHECK(EncodeTurn(*decoded) == turn);
}
