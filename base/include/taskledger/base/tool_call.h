// ToolCall: one tool call, the one shape it has from the adapter that parsed
// it out of a model's message, through the policy gate and the ledger, to the
// command that executes it. Plain value type; thread-compatible.
//
// `ProposedCall` is the same type under the name the gate's API used in 0.1
// (a call the model proposes, before anything executes); both names stay.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace taskledger {

struct ToolCall {
  std::string id;    // the vendor's call id ("call_0"); for MCP the JSON-RPC request id as text
  std::string tool;  // the tool (function) name
  nlohmann::json arguments = nlohmann::json::object();  // always an object
  bool operator==(const ToolCall&) const = default;
};

using ProposedCall = ToolCall;

}  // namespace taskledger
