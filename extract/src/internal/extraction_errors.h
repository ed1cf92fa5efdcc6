// The structured extraction error records the Extractor returns for
// Ledger::StageError: {source, tool, call_id, rule, code, message} for a tool
// output, {source, rule, code, message} for a user message ("rule" only when
// a specific rule failed). Built as the ledger's typed ExtractionError and
// written by its one encoder (taskledger/ledger/extraction_error.h). Pure
// functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "taskledger/base/tool_call.h"
#include "taskledger/ledger/extraction_error.h"

namespace taskledger::extract_internal {

inline nlohmann::json ToolError(const ProposedCall& call, std::string_view rule,
                                std::string_view code, std::string message) {
  ExtractionError e;
  e.source = "tool";
  e.tool = call.tool;
  e.call_id = call.id;
  if (!rule.empty()) e.rule = std::string(rule);
  e.code = std::string(code);
  e.message = std::move(message);
  return EncodeExtractionError(e);
}

inline nlohmann::json UserError(std::string_view rule, std::string_view code, std::string message) {
  ExtractionError e;
  e.source = "user";
  if (!rule.empty()) e.rule = std::string(rule);
  e.code = std::string(code);
  e.message = std::move(message);
  return EncodeExtractionError(e);
}

}  // namespace taskledger::extract_internal
