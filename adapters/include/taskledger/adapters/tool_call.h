// Vendor-neutral tool calls (ToolCall, base/tool_call.h) and results, the
// common currency of the message adapters (openai_chat.h, openai_responses.h,
// anthropic.h, mcp_messages.h).
//
// An adapter turns a vendor's assistant message into ParsedCalls: the calls
// that can be gated and executed, and a CallError for each call whose
// arguments cannot be used (not valid JSON, not an object, nested too deep) or
// whose tool name is missing. Such a call must not run; CallError::ToResult()
// gives the error result to send back in its place, which the same adapter
// then writes in the vendor's result shape. A message that is malformed as a
// whole (a call without an id, which no result could answer) is an
// InvalidArgument Status instead. Plain values; thread-compatible.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "taskledger/base/json_depth.h"
#include "taskledger/base/tool_call.h"

namespace taskledger {

// Arguments nested deeper than this are refused: rules, codecs and renderers
// walk them recursively.
inline constexpr int kMaxArgumentDepth = kDefaultMaxJsonDepth;

struct ToolResult {
  std::string call_id;
  std::string content;    // text the model reads
  bool is_error = false;  // carried where the vendor has a field for it
  bool operator==(const ToolResult&) const = default;
};

struct CallError {
  std::string call_id;
  std::string name;           // as given, possibly empty
  std::string raw_arguments;  // the arguments as received (JSON text for non-strings)
  std::string message;        // what is wrong: "arguments are not valid JSON: ..."

  // An is_error result for this call, telling the model what to fix.
  ToolResult ToResult() const;
  bool operator==(const CallError&) const = default;
};

struct ParsedCalls {
  std::vector<ToolCall> calls;    // in message order
  std::vector<CallError> errors;  // in message order
  bool empty() const { return calls.empty() && errors.empty(); }
};

}  // namespace taskledger
