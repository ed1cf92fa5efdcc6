// Anthropic Messages API adapter (see anthropic.h for the wire shapes).
#include "taskledger/adapters/anthropic.h"

#include <string>

#include "internal/wire.h"

namespace taskledger::anthropic {
namespace {

using namespace adapters_internal;

Result<ParsedCalls> Parse(const nlohmann::json& message) {
  if (!message.is_object()) return Status::InvalidArgument("message is not a JSON object");
  ParsedCalls parsed;
  const nlohmann::json* content = Field(message, "content");
  if (!content || content->is_string()) return parsed;
  if (!content->is_array()) return Status::InvalidArgument("content is not a string or an array");
  for (size_t i = 0; i < content->size(); ++i) {
    const nlohmann::json& block = (*content)[i];
    const std::string* type = StringField(block, "type");
    if (!type || *type != "tool_use") continue;
    const std::string where = "content[" + std::to_string(i) + "] (tool_use)";
    const std::string* id = StringField(block, "id");
    if (!id || id->empty()) return Status::InvalidArgument(where + " has no id");
    const std::string* name = StringField(block, "name");
    const nlohmann::json* input = Field(block, "input");
    if (!input) {
      AddCall(parsed, *id, name ? *name : "", Status::InvalidArgument("input is missing"), "");
      continue;
    }
    Status valid = CheckArguments(*input);
    AddCall(parsed, *id, name ? *name : "",
            valid.ok() ? Result<nlohmann::json>(*input) : Result<nlohmann::json>(valid),
            Dump(*input));
  }
  if (Status s = CheckUniqueIds(parsed); !s.ok()) return s;
  return parsed;
}

Result<std::vector<ToolResult>> ParseResultBlocks(const nlohmann::json& message) {
  if (!message.is_object()) return Status::InvalidArgument("message is not a JSON object");
  std::vector<ToolResult> results;
  const nlohmann::json* content = Field(message, "content");
  if (!content || content->is_string()) return results;
  if (!content->is_array()) return Status::InvalidArgument("content is not a string or an array");
  for (size_t i = 0; i < content->size(); ++i) {
    const nlohmann::json& block = (*content)[i];
    const std::string* type = StringField(block, "type");
    if (!type || *type != "tool_result") continue;
    const std::string where = "content[" + std::to_string(i) + "] (tool_result)";
    const std::string* id = StringField(block, "tool_use_id");
    if (!id || id->empty()) return Status::InvalidArgument(where + " has no tool_use_id");
    std::string text;
    if (const nlohmann::json* body = Field(block, "content")) {  // optional in the API
      Result<std::string> t = ContentText(*body, where + " content");
      if (!t.has_value()) return t.error();
      text = std::move(t).value();
    }
    const nlohmann::json* is_error = Field(block, "is_error");
    if (is_error && !is_error->is_boolean()) {
      return Status::InvalidArgument(where + " is_error is not a boolean");
    }
    results.push_back({*id, std::move(text), is_error && is_error->get<bool>()});
  }
  return results;
}

}  // namespace

Result<ParsedCalls> ParseCalls(const nlohmann::json& message) {
  return Guarded<ParsedCalls>("parsing an anthropic message", [&] { return Parse(message); });
}

nlohmann::json ProduceCalls(const std::vector<ToolCall>& calls) {
  nlohmann::json content = nlohmann::json::array();
  for (const ToolCall& c : calls) {
    content.push_back(
        {{"type", "tool_use"}, {"id", c.id}, {"name", c.tool}, {"input", c.arguments}});
  }
  return {{"role", "assistant"}, {"content", std::move(content)}};
}

Result<std::vector<ToolResult>> ParseResults(const nlohmann::json& message) {
  return Guarded<std::vector<ToolResult>>("parsing anthropic tool results",
                                          [&] { return ParseResultBlocks(message); });
}

nlohmann::json ProduceResults(const std::vector<ToolResult>& results) {
  nlohmann::json content = nlohmann::json::array();
  for (const ToolResult& r : results) {
    nlohmann::json block = {
        {"type", "tool_result"}, {"tool_use_id", r.call_id}, {"content", r.content}};
    if (r.is_error) block["is_error"] = true;  // optional, false by default
    content.push_back(std::move(block));
  }
  return {{"role", "user"}, {"content", std::move(content)}};
}

}  // namespace taskledger::anthropic
