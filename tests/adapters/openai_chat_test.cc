// OpenAI Chat Completions: tool calls and tool messages, round-tripped through
// the neutral types, with payloads shaped as the function-calling guide shows.
#include "taskledger/adapters/openai_chat.h"

#include <catch2/catch.hpp>

namespace taskledger {
namespace {

using nlohmann::json;

// A chat.completion response with two parallel calls (finish_reason tool_calls).
json TwoCallResponse() {
  return json::parse(R"json({
    "id": "chatcmpl-abc123",
    "object": "chat.completion",
    "created": 1741570283,
    "model": "gpt-4.1-2025-04-14",
    "choices": [{
      "index": 0,
      "message": {
        "role": "assistant",
        "content": null,
        "tool_calls": [
          {"id": "call_12345xyz", "type": "function",
           "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris, France\"}"}},
          {"id": "call_67890abc", "type": "function",
           "function": {"name": "get_weather", "arguments": "{\"location\":\"Bogotá, Colombia\"}"}}
        ],
        "refusal": null
      },
      "logprobs": null,
      "finish_reason": "tool_calls"
    }]
  })json");
}

TEST_CASE("chat: parallel calls parse and produce the vendor shape", "[adapters][openai_chat]") {
  const json response = TwoCallResponse();
  Result<ParsedCalls> parsed = openai_chat::ParseCalls(response);
  REQUIRE(parsed.has_value());
  REQUIRE(parsed->errors.empty());
  REQUIRE(parsed->calls.size() == 2);
  CHECK(parsed->calls[0] ==
        ToolCall{"call_12345xyz", "get_weather", {{"location", "Paris, France"}}});
  CHECK(parsed->calls[1].arguments["location"] == "Bogotá, Colombia");

  const json& message = response["choices"][0]["message"];
  const json produced = openai_chat::ProduceCalls(parsed->calls);
  CHECK(produced["role"] == "assistant");
  CHECK(produced["content"].is_null());
  CHECK(produced["tool_calls"] == message["tool_calls"]);  // arguments strings included

  // The bare message parses the same as the whole response.
  Result<ParsedCalls> again = openai_chat::ParseCalls(message);
  REQUIRE(again.has_value());
  CHECK(again->calls == parsed->calls);
}

TEST_CASE("chat: arguments with whitespace and key order survive as JSON",
          "[adapters][openai_chat]") {
  json message = {{"role", "assistant"},
                  {"tool_calls",
                   {{{"id", "call_1"},
                     {"type", "function"},
                     {"function",
                      {{"name", "create_refund"},
                       {"arguments", "{\n  \"order_id\": \"A-1\",\n  \"amount\": 12.5\n}"}}}}}}};
  Result<ParsedCalls> parsed = openai_chat::ParseCalls(message);
  REQUIRE(parsed.has_value());
  REQUIRE(parsed->calls.size() == 1);
  const json produced = openai_chat::ProduceCalls(parsed->calls);
  const std::string args = produced["tool_calls"][0]["function"]["arguments"];
  CHECK(json::parse(args) == json{{"order_id", "A-1"}, {"amount", 12.5}});
}

TEST_CASE("chat: tool messages round-trip", "[adapters][openai_chat]") {
  const json messages = json::parse(R"json([
    {"role": "user", "content": "What's the weather like in Paris and Bogotá today?"},
    {"role": "tool", "tool_call_id": "call_12345xyz", "content": "{\"temperature\":15}"},
    {"role": "tool", "tool_call_id": "call_67890abc", "content": "{\"temperature\":19}"}
  ])json");
  Result<std::vector<ToolResult>> results = openai_chat::ParseResults(messages);
  REQUIRE(results.has_value());
  REQUIRE(results->size() == 2);
  CHECK((*results)[0] == ToolResult{"call_12345xyz", "{\"temperature\":15}", false});
  const json produced = openai_chat::ProduceResults(*results);
  CHECK(produced == json{messages[1], messages[2]});

  // Content given as text parts reads as its text.
  const json parts = {{"role", "tool"},
                      {"tool_call_id", "call_1"},
                      {"content", {{{"type", "text"}, {"text", "15 degrees"}}}}};
  Result<std::vector<ToolResult>> one = openai_chat::ParseResults(parts);
  REQUIRE(one.has_value());
  CHECK(one->at(0).content == "15 degrees");
}

json CallWithArguments(const std::string& id, const json& arguments) {
  return {{"id", id},
          {"type", "function"},
          {"function", {{"name", "delete_account"}, {"arguments", arguments}}}};
}

TEST_CASE("chat: malformed arguments give per-call errors and error results",
          "[adapters][openai_chat]") {
  const json message = {{"role", "assistant"},
                        {"content", nullptr},
                        {"tool_calls",
                         {CallWithArguments("call_ok", "{\"user_id\":\"u1\"}"),
                          CallWithArguments("call_truncated", "{\"user_id\": \"u1\""),
                          CallWithArguments("call_array", "[\"u1\"]"),
                          CallWithArguments("call_object", json{{"user_id", "u1"}}),
                          CallWithArguments("call_empty", "")}}};
  Result<ParsedCalls> parsed = openai_chat::ParseCalls(message);
  REQUIRE(parsed.has_value());
  REQUIRE(parsed->calls.size() == 2);
  CHECK(parsed->calls[0].id == "call_ok");
  CHECK(parsed->calls[1].id == "call_empty");  // "" means no arguments
  CHECK(parsed->calls[1].arguments == json::object());
  REQUIRE(parsed->errors.size() == 3);
  CHECK(parsed->errors[0].call_id == "call_truncated");
  CHECK(parsed->errors[0].raw_arguments == "{\"user_id\": \"u1\"");
  CHECK_THAT(parsed->errors[0].message, Catch::Contains("not valid JSON"));
  CHECK_THAT(parsed->errors[1].message, Catch::Contains("must be a JSON object, got array"));
  CHECK_THAT(parsed->errors[2].message, Catch::Contains("must be a JSON string, got object"));

  const json replies = openai_chat::ProduceResults({parsed->errors[0].ToResult()});
  REQUIRE(replies.size() == 1);
  CHECK(replies[0]["role"] == "tool");
  CHECK(replies[0]["tool_call_id"] == "call_truncated");
  CHECK_THAT(replies[0]["content"].get<std::string>(),
             Catch::StartsWith("error: the call to delete_account was not executed: arguments "
                               "are not valid JSON"));
}

TEST_CASE("chat: structural problems fail the whole message without throwing",
          "[adapters][openai_chat]") {
  for (const json& bad :
       {json(42), json(nullptr), json{{"role", "assistant"}, {"tool_calls", "x"}},
        json{{"tool_calls", {{{"type", "function"}, {"function", {{"name", "f"}}}}}}},
        json{{"choices", json::array()}},
        json{{"tool_calls", {CallWithArguments("same", "{}"), CallWithArguments("same", "{}")}}}}) {
    Result<ParsedCalls> parsed = openai_chat::ParseCalls(bad);
    CHECK_FALSE(parsed.has_value());
    if (!parsed.has_value()) CHECK(parsed.error().code() == StatusCode::kInvalidArgument);
  }
  // No tool_calls at all: nothing to do.
  Result<ParsedCalls> text_only =
      openai_chat::ParseCalls({{"role", "assistant"}, {"content", "Hi"}});
  REQUIRE(text_only.has_value());
  CHECK(text_only->empty());
  // A tool message without tool_call_id cannot be matched to a call.
  CHECK_FALSE(openai_chat::ParseResults({{"role", "tool"}, {"content", "x"}}).has_value());
}

TEST_CASE("chat: arguments nested too deep are refused", "[adapters][openai_chat]") {
  std::string deep = "{\"a\":";
  for (int i = 0; i < 200; ++i) deep += "[";
  for (int i = 0; i < 200; ++i) deep += "]";
  deep += "}";
  Result<ParsedCalls> parsed =
      openai_chat::ParseCalls({{"tool_calls", {CallWithArguments("call_deep", deep)}}});
  REQUIRE(parsed.has_value());
  REQUIRE(parsed->errors.size() == 1);
  CHECK_THAT(parsed->errors[0].message, Catch::Contains("deeper than 64"));
}

TEST_CASE("chat: unsupported tool call types are not executed", "[adapters][openai_chat]") {
  const json message = {{"tool_calls",
                         {{{"id", "call_c"},
                           {"type", "custom"},
                           {"custom", {{"name", "code_exec"}, {"input", "print(1)"}}}}}}};
  Result<ParsedCalls> parsed = openai_chat::ParseCalls(message);
  REQUIRE(parsed.has_value());
  CHECK(parsed->calls.empty());
  REQUIRE(parsed->errors.size() == 1);
  CHECK_THAT(parsed->errors[0].message, Catch::Contains("'custom' is not supported"));
}

}  // namespace
}  // namespace taskledger
