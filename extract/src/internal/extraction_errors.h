// The structured extraction error records the Extractor returns for
// Ledger::StageError: {source, tool, call_id, rule, code, message} for a tool
// output, {source, rule, code, message} for a user message ("rule" only when
// a specific rule failed). Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "taskledger/base/tool_call.h"

namespace taskledger::extract_internal {

inline nlohmann::json ToolError(const ProposedCall& call, std::string_view rule,
                                std::string_view code, std::string message) {
  nlohmann::json e = {{"source", "tool"}, {"tool", call.tool}, {"call_id", call.id}};
  if (!rule.empty()) e["rule"] = rule;
  e["code"] = code;
  e["message"] = std::move(message);
  return e;
}

inline nlohmann::json UserError(std::string_view rule, std::string_view code, std::string message) {
  nlohmann::json e = {{"source", "user"}};
  if (!rule.empty()) e["rule"] = rule;
  e["code"] = code;
  e["message"] = std::move(message);
  return e;
}

}  // namespace taskledger::extract_internal
