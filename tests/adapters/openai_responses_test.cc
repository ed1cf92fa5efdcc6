// OpenAI Responses API: function_call output items and function_call_output
// input items, round-tripped through the neutral types.
#include "taskledger/adapters/openai_responses.h"

#include <catch2/catch.hpp>

namespace taskledger {
namespace {

using nlohmann::json;

// A response whose output holds reasoning, then two parallel function calls.
json TwoCallResponse() {
  return json::parse(R"json({
    "id": "resp_67ca09c5efe0819096d0511c92b8c890096610f474011cc0",
    "object": "response",
    "status": "completed",
    "output": [
      {"type": "reasoning", "id": "rs_67ca09", "summary": []},
      {"type": "function_call", "id": "fc_12345xyz", "call_id": "call_12345xyz",
       "name": "get_weather", "arguments": "{\"location\":\"Paris, France\"}",
       "status": "completed"},
      {"type": "function_call", "id": "fc_67890abc", "call_id": "call_67890abc",
       "name": "get_weather", "arguments": "{\"location\":\"Bogotá, Colombia\"}",
       "status": "completed"}
    ]
  })json");
}

TEST_CASE("responses: parallel function calls round-trip", "[adapters][openai_responses]") {
  const json response = TwoCallResponse();
  Result<ParsedCalls> parsed = openai_responses::ParseCalls(response);
  REQUIRE(parsed.has_value());
  REQUIRE(parsed->errors.empty());
  REQUIRE(parsed->calls.size() == 2);
  CHECK(parsed->calls[0] ==
        ToolCall{"call_12345xyz", "get_weather", {{"location", "Paris, France"}}});

  const json produced = openai_responses::ProduceCalls(parsed->calls);
  REQUIRE(produced.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    json expected = response["output"][i + 1];
    expected.erase("id");      // the item id and status belong to the server's copy;
    expected.erase("status");  // call_id is what results refer to
    CHECK(produced[i] == expected);
  }
  // Items given directly (as when replaying input) parse the same.
  Result<ParsedCalls> from_items = openai_responses::ParseCalls(response["output"]);
  REQUIRE(from_items.has_value());
  CHECK(from_items->calls == parsed->calls);
  Result<ParsedCalls> from_item = openai_responses::ParseCalls(response["output"][2]);
  REQUIRE(from_item.has_value());
  CHECK(from_item->calls == std::vector<ToolCall>{parsed->calls[1]});
}

TEST_CASE("responses: function_call_output items round-trip", "[adapters][openai_responses]") {
  const json input = json::parse(R"json([
    {"role": "user", "content": "What's the weather like in Paris and Bogotá today?"},
    {"type": "function_call_output", "call_id": "call_12345xyz", "output": "{\"temperature\":15}"},
    {"type": "function_call_output", "call_id": "call_67890abc", "output": "{\"temperature\":19}"}
  ])json");
  Result<std::vector<ToolResult>> results = openai_responses::ParseResults(input);
  REQUIRE(results.has_value());
  REQUIRE(results->size() == 2);
  CHECK((*results)[1] == ToolResult{"call_67890abc", "{\"temperature\":19}", false});
  CHECK(openai_responses::ProduceResults(*results) == json{input[1], input[2]});

  const json parts = {{"type", "function_call_output"},
                      {"call_id", "call_1"},
                      {"output", {{{"type", "input_text"}, {"text", "15 degrees"}}}}};
  Result<std::vector<ToolResult>> one = openai_responses::ParseResults(parts);
  REQUIRE(one.has_value());
  CHECK(one->at(0).content == "15 degrees");
}

json FunctionCall(const std::string& call_id, const json& arguments) {
  return {{"type", "function_call"},  {"id", "fc_" + call_id},  {"call_id", call_id},
          {"name", "transfer_funds"}, {"arguments", arguments}, {"status", "completed"}};
}

TEST_CASE("responses: malformed arguments become function_call_output errors",
          "[adapters][openai_responses]") {
  const json output = {
      {"output",
       {FunctionCall("call_ok", "{\"amount\":5}"), FunctionCall("call_bad", "{amount: 5}"),
        FunctionCall("call_number", "5"), FunctionCall("call_null", nullptr)}}};
  Result<ParsedCalls> parsed = openai_responses::ParseCalls(output);
  REQUIRE(parsed.has_value());
  REQUIRE(parsed->calls.size() == 1);
  CHECK(parsed->calls[0].id == "call_ok");
  REQUIRE(parsed->errors.size() == 3);
  CHECK(parsed->errors[0].call_id == "call_bad");
  CHECK_THAT(parsed->errors[0].message, Catch::Contains("not valid JSON"));
  CHECK_THAT(parsed->errors[1].message, Catch::Contains("got number"));
  CHECK_THAT(parsed->errors[2].message, Catch::Contains("must be a JSON string, got null"));

  std::vector<ToolResult> replies;
  for (const CallError& e : parsed->errors) replies.push_back(e.ToResult());
  const json items = openai_responses::ProduceResults(replies);
  REQUIRE(items.size() == 3);
  CHECK(items[0]["type"] == "function_call_output");
  CHECK(items[0]["call_id"] == "call_bad");
  CHECK_THAT(items[0]["output"].get<std::string>(),
             Catch::StartsWith("error: the call to transfer_funds was not executed"));
}

TEST_CASE("responses: structural problems fail without throwing", "[adapters][openai_responses]") {
  for (const json& bad : {json("text"), json{{"output", 3}},
                          json{{"output", {{{"type", "function_call"}, {"name", "f"}}}}},
                          json{FunctionCall("dup", "{}"), FunctionCall("dup", "{}")}}) {
    Result<ParsedCalls> parsed = openai_responses::ParseCalls(bad);
    CHECK_FALSE(parsed.has_value());
  }
  Result<ParsedCalls> message_only = openai_responses::ParseCalls(
      {{"output", {{{"type", "message"}, {"role", "assistant"}, {"content", json::array()}}}}});
  REQUIRE(message_only.has_value());
  CHECK(message_only->empty());
  CHECK_FALSE(openai_responses::ParseResults({{"type", "function_call_output"}, {"output", "x"}})
                  .has_value());
}

}  // namespace
}  // namespace taskledger
