// OpenAI Chat Completions adapter (see openai_chat.h for the wire shapes).
#include "taskledger/adapters/openai_chat.h"

#include <string>

#include "internal/wire.h"

namespace taskledger::openai_chat {
namespace {

using namespace adapters_internal;

Result<ParsedCalls> Parse(const nlohmann::json& input) {
  const nlohmann::json* message = &input;
  if (const nlohmann::json* choices = Field(input, "choices")) {
    if (!choices->is_array() || choices->empty() || !Field((*choices)[0], "message")) {
      return Status::InvalidArgument("chat completion has no choices[0].message");
    }
    message = Field((*choices)[0], "message");
  }
  if (!message->is_object()) return Status::InvalidArgument("message is not a JSON object");
  ParsedCalls parsed;
  const nlohmann::json* tool_calls = Field(*message, "tool_calls");
  if (!tool_calls || tool_calls->is_null()) return parsed;
  if (!tool_calls->is_array()) return Status::InvalidArgument("tool_calls is not an array");
  for (size_t i = 0; i < tool_calls->size(); ++i) {
    const nlohmann::json& tc = (*tool_calls)[i];
    const std::string where = "tool_calls[" + std::to_string(i) + "]";
    const std::string* id = StringField(tc, "id");
    if (!id || id->empty()) return Status::InvalidArgument(where + " has no id");
    const std::string* type = StringField(tc, "type");
    const nlohmann::json* function = Field(tc, "function");
    const std::string* name = function ? StringField(*function, "name") : nullptr;
    const nlohmann::json* args = function ? Field(*function, "arguments") : nullptr;
    std::string tool_name = name ? *name : "";
    if (type && *type != "function") {
      parsed.errors.push_back(
          {*id, tool_name, "", "tool call type '" + *type + "' is not supported"});
    } else if (!args || !args->is_string()) {
      const std::string got = args ? args->type_name() : "nothing";
      AddCall(parsed, *id, tool_name,
              Status::InvalidArgument("function.arguments must be a JSON string, got " + got),
              args ? Dump(*args) : "");
    } else {
      const auto& text = args->get_ref<const std::string&>();
      AddCall(parsed, *id, tool_name, ArgumentsFromText(text), text);
    }
  }
  if (Status s = CheckUniqueIds(parsed); !s.ok()) return s;
  return parsed;
}

Result<std::vector<ToolResult>> ParseResultMessages(const nlohmann::json& input) {
  std::vector<ToolResult> results;
  const bool many = input.is_array();
  const size_t n = many ? input.size() : 1;
  for (size_t i = 0; i < n; ++i) {
    const nlohmann::json& m = many ? input[i] : input;
    const std::string where = "message " + std::to_string(i);
    if (!m.is_object()) return Status::InvalidArgument(where + " is not a JSON object");
    const std::string* role = StringField(m, "role");
    if (!role || *role != "tool") continue;
    const std::string* call_id = StringField(m, "tool_call_id");
    if (!call_id || call_id->empty()) {
      return Status::InvalidArgument(where + " (role tool) has no tool_call_id");
    }
    const nlohmann::json* content = Field(m, "content");
    if (!content) return Status::InvalidArgument(where + " (role tool) has no content");
    Result<std::string> text = ContentText(*content, where + " content");
    if (!text.has_value()) return text.error();
    results.push_back({*call_id, std::move(text).value(), false});
  }
  return results;
}

}  // namespace

Result<ParsedCalls> ParseCalls(const nlohmann::json& message) {
  return Guarded<ParsedCalls>("parsing a chat completions message", [&] { return Parse(message); });
}

nlohmann::json ProduceCalls(const std::vector<ToolCall>& calls) {
  nlohmann::json tool_calls = nlohmann::json::array();
  for (const ToolCall& c : calls) {
    tool_calls.push_back({{"id", c.id},
                          {"type", "function"},
                          {"function", {{"name", c.tool}, {"arguments", Dump(c.arguments)}}}});
  }
  return {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", std::move(tool_calls)}};
}

Result<std::vector<ToolResult>> ParseResults(const nlohmann::json& messages) {
  return Guarded<std::vector<ToolResult>>("parsing chat completions tool messages",
                                          [&] { return ParseResultMessages(messages); });
}

nlohmann::json ProduceResults(const std::vector<ToolResult>& results) {
  nlohmann::json out = nlohmann::json::array();
  for (const ToolResult& r : results) {
    out.push_back({{"role", "tool"}, {"tool_call_id", r.call_id}, {"content", r.content}});
  }
  return out;
}

}  // namespace taskledger::openai_chat
