// The typed extraction errors the Extractor returns for Ledger::StageError:
// source, tool, call_id, rule, code and message for a tool output; source,
// rule, code and message for a user message ("rule" only when a specific rule
// failed). The ledger's one encoder writes them
// (taskledger/ledger/extraction_error.h). Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "taskledger/base/tool_call.h"
#include "taskledger/ledger/extraction_error.h"

namespace taskledger::extract_internal {

inline ExtractionError ToolError(const ProposedCall& call, std::string_view rule,
                                 std::string_view code, std::string message) {
  ExtractionError e;
  e.source = "tool";
  e.tool = call.tool;
  e.call_id = call.id;
  if (!rule.empty()) e.rule = std::string(rule);
  e.code = std::string(code);
  e.message = std::move(message);
  return e;
}

inline ExtractionError UserError(std::string_view rule, std::string_view code,
                                 std::string message) {
  ExtractionError e;
  e.source = "user";
  if (!rule.empty()) e.rule = std::string(rule);
  e.code = std::string(code);
  e.message = std::move(message);
  return e;
}

}  // namespace taskledger::extract_internal
