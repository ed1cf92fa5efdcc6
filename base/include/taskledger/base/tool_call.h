// ProposedCall: a tool call the model wants to make, as the policy gate sees
// it before anything executes. Plain value type; thread-compatible.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace taskledger {

struct ProposedCall {
  std::string id;    // the model's call id ("call_0")
  std::string tool;  // tool name
  nlohmann::json arguments = nlohmann::json::object();
  bool operator==(const ProposedCall&) const = default;
};

}  // namespace taskledger
