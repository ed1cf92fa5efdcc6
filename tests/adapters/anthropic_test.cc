// Anthropic Messages API: tool_use blocks and tool_result blocks,
// round-tripped through the neutral types, shaped as the tool-use docs show.
#include "taskledger/adapters/anthropic.h"

#include <catch2/catch.hpp>

namespace taskledger {
namespace {

using nlohmann::json;

// A response with text and two parallel tool_use blocks (stop_reason tool_use).
json TwoToolUseResponse() {
  return json::parse(R"json({
    "id": "msg_01Aq9w938a90dw8q",
    "type": "message",
    "model": "claude-sonnet-4-5",
    "stop_reason": "tool_use",
    "role": "assistant",
    "content": [
      {"type": "text", "text": "I'll check the weather and the time in San Francisco."},
      {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
       "input": {"location": "San Francisco, CA", "unit": "celsius"}},
      {"type": "tool_use", "id": "toolu_01B2c3d4e5f6g7h8i9j0k1l2m", "name": "get_time",
       "input": {"timezone": "America/Los_Angeles"}}
    ]
  })json");
}

TEST_CASE("anthropic: parallel tool_use blocks round-trip", "[adapters][anthropic]") {
  const json response = TwoToolUseResponse();
  Result<ParsedCalls> parsed = anthropic::ParseCalls(response);
  REQUIRE(parsed.has_value());
  REQUIRE(parsed->errors.empty());
  REQUIRE(parsed->calls.size() == 2);
  CHECK(parsed->calls[1] == ToolCall{"toolu_01B2c3d4e5f6g7h8i9j0k1l2m",
                                     "get_time",
                                     {{"timezone", "America/Los_Angeles"}}});

  const json produced = anthropic::ProduceCalls(parsed->calls);
  CHECK(produced ==
        json{{"role", "assistant"}, {"content", {response["content"][1], response["content"][2]}}});
}

TEST_CASE("anthropic: tool_result blocks round-trip, errors flagged", "[adapters][anthropic]") {
  const json message = json::parse(R"json({
    "role": "user",
    "content": [
      {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
       "content": "15 degrees"},
      {"type": "tool_result", "tool_use_id": "toolu_01B2c3d4e5f6g7h8i9j0k1l2m",
       "content": "ConnectionError: the time service API is not available (HTTP 500)",
       "is_error": true}
    ]
})json");
  Result<std::vector<ToolResult>> results = anthropic::ParseResults(message);
  REQUIRE(results.has_value());
  REQUIRE(results->size() == 2);
  CHECK_FALSE((*results)[0].is_error);
  CHECK((*results)[1].is_error);
  CHECK(anthropic::ProduceResults(*results) == message);

  // Content as text blocks, and a result with no content at all.
  const json blocks = json::parse(R"json({"role": "user", "content": [
    {"type": "tool_result", "tool_use_id": "toolu_1",
     "content": [{"type": "text", "text": "line one"}, {"type": "text", "text": "line two"}]},
    {"type": "tool_result", "tool_use_id": "toolu_2"},
    {"type": "text", "text": "What should I do next?"}
  ]})json");
  Result<std::vector<ToolResult>> more = anthropic::ParseResults(blocks);
  REQUIRE(more.has_value());
  REQUIRE(more->size() == 2);
  CHECK((*more)[0].content == "line one\nline two");
  CHECK((*more)[1] == ToolResult{"toolu_2", "", false});
}

json ToolUse(const std::string& id, const json& input) {
  return {{"type", "tool_use"}, {"id", id}, {"name", "cancel_order"}, {"input", input}};
}

TEST_CASE("anthropic: non-object input gives per-call errors and is_error results",
          "[adapters][anthropic]") {
  const json message = {
      {"role", "assistant"},
      {"content",
       {ToolUse("toolu_ok", {{"order_id", "A-1"}}),
        ToolUse("toolu_str", "A-1"),
        ToolUse("toolu_arr", json::array({"A-1"})),
        {{"type", "tool_use"}, {"id", "toolu_missing"}, {"name", "cancel_order"}},
        {{"type", "tool_use"}, {"id", "toolu_noname"}, {"input", json::object()}}}}};
  Result<ParsedCalls> parsed = anthropic::ParseCalls(message);
  REQUIRE(parsed.has_value());
  REQUIRE(parsed->calls.size() == 1);
  REQUIRE(parsed->errors.size() == 4);
  CHECK(parsed->errors[0].call_id == "toolu_str");
  CHECK(parsed->errors[0].raw_arguments == "\"A-1\"");
  CHECK_THAT(parsed->errors[0].message, Catch::Contains("got string"));
  CHECK_THAT(parsed->errors[1].message, Catch::Contains("got array"));
  CHECK_THAT(parsed->errors[2].message, Catch::Contains("input is missing"));
  CHECK_THAT(parsed->errors[3].message, Catch::Contains("tool name is missing"));

  std::vector<ToolResult> replies;
  for (const CallError& e : parsed->errors) replies.push_back(e.ToResult());
  const json reply = anthropic::ProduceResults(replies);
  CHECK(reply["role"] == "user");
  REQUIRE(reply["content"].size() == 4);
  CHECK(reply["content"][0]["type"] == "tool_result");
  CHECK(reply["content"][0]["tool_use_id"] == "toolu_str");
  CHECK(reply["content"][0]["is_error"] == true);
  CHECK_THAT(reply["content"][0]["content"].get<std::string>(),
             Catch::StartsWith("error: the call to cancel_order was not executed"));
}

TEST_CASE("anthropic: structural problems fail without throwing", "[adapters][anthropic]") {
  for (const json& bad :
       {json::array(), json{{"content", 7}},
        json{{"content", {{{"type", "tool_use"}, {"name", "f"}, {"input", json::object()}}}}},
        json{{"content", {ToolUse("dup", json::object()), ToolUse("dup", json::object())}}}}) {
    CHECK_FALSE(anthropic::ParseCalls(bad).has_value());
  }
  Result<ParsedCalls> text = anthropic::ParseCalls({{"role", "assistant"}, {"content", "Hello"}});
  REQUIRE(text.has_value());
  CHECK(text->empty());
  CHECK_FALSE(
      anthropic::ParseResults(
          {{"content", {{{"type", "tool_result"}, {"tool_use_id", "t"}, {"is_error", "yes"}}}}})
          .has_value());
}

}  // namespace
}  // namespace taskledger
