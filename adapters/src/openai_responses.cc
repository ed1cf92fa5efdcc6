// OpenAI Responses API adapter (see openai_responses.h for the wire shapes).
#include "taskledger/adapters/openai_responses.h"

#include <string>

#include "internal/wire.h"

namespace taskledger::openai_responses {
namespace {

using namespace adapters_internal;

// The items of a response object, an item array, or a single item. Items have
// a "type"; a response has none (and a function_call_output item has an
// "output" too, so "type" decides).
Result<const nlohmann::json*> ItemsOf(const nlohmann::json& input, nlohmann::json& single) {
  if (input.is_array()) return &input;
  if (!input.is_object()) return Status::InvalidArgument("expected a response, an item or items");
  const nlohmann::json* output = Field(input, "output");
  if (output && !Field(input, "type")) {
    if (!output->is_array()) return Status::InvalidArgument("response output is not an array");
    return output;
  }
  single = nlohmann::json::array({input});
  return &single;
}

Result<ParsedCalls> Parse(const nlohmann::json& input) {
  nlohmann::json single;
  Result<const nlohmann::json*> items = ItemsOf(input, single);
  if (!items.has_value()) return items.error();
  ParsedCalls parsed;
  for (size_t i = 0; i < (*items)->size(); ++i) {
    const nlohmann::json& item = (**items)[i];
    const std::string* type = StringField(item, "type");
    if (!type || *type != "function_call") continue;
    const std::string where = "item " + std::to_string(i) + " (function_call)";
    const std::string* call_id = StringField(item, "call_id");
    if (!call_id || call_id->empty()) return Status::InvalidArgument(where + " has no call_id");
    const std::string* name = StringField(item, "name");
    const nlohmann::json* args = Field(item, "arguments");
    if (!args || !args->is_string()) {
      const std::string got = args ? args->type_name() : "nothing";
      AddCall(parsed, *call_id, name ? *name : "",
              Status::InvalidArgument("arguments must be a JSON string, got " + got),
              args ? Dump(*args) : "");
    } else {
      const auto& text = args->get_ref<const std::string&>();
      AddCall(parsed, *call_id, name ? *name : "", ArgumentsFromText(text), text);
    }
  }
  if (Status s = CheckUniqueIds(parsed); !s.ok()) return s;
  return parsed;
}

Result<std::vector<ToolResult>> ParseOutputs(const nlohmann::json& input) {
  nlohmann::json single;
  Result<const nlohmann::json*> items = ItemsOf(input, single);
  if (!items.has_value()) return items.error();
  std::vector<ToolResult> results;
  for (size_t i = 0; i < (*items)->size(); ++i) {
    const nlohmann::json& item = (**items)[i];
    const std::string* type = StringField(item, "type");
    if (!type || *type != "function_call_output") continue;
    const std::string where = "item " + std::to_string(i) + " (function_call_output)";
    const std::string* call_id = StringField(item, "call_id");
    if (!call_id || call_id->empty()) return Status::InvalidArgument(where + " has no call_id");
    const nlohmann::json* output = Field(item, "output");
    if (!output) return Status::InvalidArgument(where + " has no output");
    Result<std::string> text = ContentText(*output, where + " output");
    if (!text.has_value()) return text.error();
    results.push_back({*call_id, std::move(text).value(), false});
  }
  return results;
}

}  // namespace

Result<ParsedCalls> ParseCalls(const nlohmann::json& response) {
  return Guarded<ParsedCalls>("parsing responses output items", [&] { return Parse(response); });
}

nlohmann::json ProduceCalls(const std::vector<ToolCall>& calls) {
  nlohmann::json items = nlohmann::json::array();
  for (const ToolCall& c : calls) {
    items.push_back({{"type", "function_call"},
                     {"call_id", c.id},
                     {"name", c.tool},
                     {"arguments", Dump(c.arguments)}});
  }
  return items;
}

Result<std::vector<ToolResult>> ParseResults(const nlohmann::json& items) {
  return Guarded<std::vector<ToolResult>>("parsing responses input items",
                                          [&] { return ParseOutputs(items); });
}

nlohmann::json ProduceResults(const std::vector<ToolResult>& results) {
  nlohmann::json items = nlohmann::json::array();
  for (const ToolResult& r : results) {
    items.push_back(
        {{"type", "function_call_output"}, {"call_id", r.call_id}, {"output", r.content}});
  }
  return items;
}

}  // namespace taskledger::openai_responses
