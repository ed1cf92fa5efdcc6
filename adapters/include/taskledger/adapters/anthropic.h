// Anthropic Messages API tool use, to and from the neutral types.
//
// Calls arrive as content blocks of an assistant message (or response):
//   {"role":"assistant","content":[{"type":"text","text":"..."},
//     {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"location":"Paris"}}]}
// where `input` is already a JSON value (it must still be an object). Results
// go back as blocks of one user message, with is_error set on failures:
//   {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1",
//     "content":"...","is_error":true}]}
// Functions never throw; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "taskledger/adapters/tool_call.h"
#include "taskledger/base/status.h"

namespace taskledger::anthropic {

// Accepts an assistant message or a Messages API response; picks its tool_use
// blocks. String content gives no calls.
Result<ParsedCalls> ParseCalls(const nlohmann::json& message);

// The assistant message whose content is one tool_use block per call.
nlohmann::json ProduceCalls(const std::vector<ToolCall>& calls);

// Accepts a user message; picks its tool_result blocks. A block's content may
// be a string or an array of text blocks; is_error defaults to false.
Result<std::vector<ToolResult>> ParseResults(const nlohmann::json& message);

// One user message with a tool_result block per result, in order (the API
// requires them to answer every tool_use of the previous assistant turn).
nlohmann::json ProduceResults(const std::vector<ToolResult>& results);

}  // namespace taskledger::anthropic
