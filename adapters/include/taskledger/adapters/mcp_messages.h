// Model Context Protocol tool calls (JSON-RPC 2.0), to and from the neutral
// types. One call per request:
//   {"jsonrpc":"2.0","id":2,"method":"tools/call",
//    "params":{"name":"get_weather","arguments":{"location":"New York"}}}
// answered by
//   {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"..."}],
//    "isError":false}}
// The JSON-RPC id may be a string or an integer and must be echoed exactly, so
// it is kept as JSON next to the neutral call, whose id is its text ("2").
// Functions never throw; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "taskledger/adapters/tool_call.h"
#include "taskledger/base/status.h"

namespace taskledger::mcp {

struct ParsedRequest {
  nlohmann::json request_id;  // as received: string or integer
  ParsedCalls calls;          // exactly one call or one error
};

struct ParsedResponse {
  nlohmann::json request_id;
  ToolResult result;  // a JSON-RPC error response becomes an is_error result
};

// The neutral call id for a JSON-RPC id: the string itself, or the integer in
// decimal.
std::string CallIdOf(const nlohmann::json& request_id);

// InvalidArgument unless `request` is a JSON-RPC 2.0 tools/call request with
// a string or integer id and a string params.name. Absent arguments mean {}.
Result<ParsedRequest> ParseToolsCall(const nlohmann::json& request);

nlohmann::json ProduceToolsCall(const nlohmann::json& request_id, const ToolCall& call);

// Accepts a result or an error response to tools/call. Content text blocks are
// joined by newlines; other blocks show as "[<type> content]".
Result<ParsedResponse> ParseToolsCallResult(const nlohmann::json& response);

// A result response with one text block; isError mirrors result.is_error.
nlohmann::json ProduceToolsCallResult(const nlohmann::json& request_id, const ToolResult& result);

}  // namespace taskledger::mcp
