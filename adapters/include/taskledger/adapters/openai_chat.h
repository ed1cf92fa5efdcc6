// OpenAI Chat Completions tool calling, to and from the neutral types.
//
// Calls arrive in an assistant message:
//   {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
//     "function":{"name":"get_weather","arguments":"{\"location\":\"Paris\"}"}}]}
// where `arguments` is a JSON *string* the model wrote and may get wrong.
// Results go back as one message per call:
//   {"role":"tool","tool_call_id":"call_1","content":"..."}
// The wire format has no error flag: an error result travels as its text.
// Functions never throw; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "taskledger/adapters/tool_call.h"
#include "taskledger/base/status.h"

namespace taskledger::openai_chat {

// Accepts an assistant message or a whole chat.completion response (its first
// choice's message). A message without tool_calls gives no calls.
Result<ParsedCalls> ParseCalls(const nlohmann::json& message);

// The assistant message carrying `calls` (content null).
nlohmann::json ProduceCalls(const std::vector<ToolCall>& calls);

// Accepts one message or an array of messages; messages of other roles are
// skipped. Content may be a string or an array of text parts.
Result<std::vector<ToolResult>> ParseResults(const nlohmann::json& messages);

// An array of role "tool" messages, one per result, in order.
nlohmann::json ProduceResults(const std::vector<ToolResult>& results);

}  // namespace taskledger::openai_chat
