// OpenAI Responses API tool calling, to and from the neutral types.
//
// Calls arrive as output items of a response:
//   {"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather",
//    "arguments":"{\"location\":\"Paris\"}","status":"completed"}
// where `arguments` is a JSON *string*. Results go back as input items:
//   {"type":"function_call_output","call_id":"call_1","output":"..."}
// The item has no error flag: an error result travels as its text.
// Functions never throw; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "taskledger/adapters/tool_call.h"
#include "taskledger/base/status.h"

namespace taskledger::openai_responses {

// Accepts a response object (its "output" array), an array of items, or one
// item; items of other types (message, reasoning, ...) are skipped.
Result<ParsedCalls> ParseCalls(const nlohmann::json& response);

// An array of function_call items, one per call, in order.
nlohmann::json ProduceCalls(const std::vector<ToolCall>& calls);

// Accepts an array of input items or one item; picks function_call_output
// items. Output may be a string or an array of input_text parts.
Result<std::vector<ToolResult>> ParseResults(const nlohmann::json& items);

// An array of function_call_output items, one per result, in order.
nlohmann::json ProduceResults(const std::vector<ToolResult>& results);

}  // namespace taskledger::openai_responses
