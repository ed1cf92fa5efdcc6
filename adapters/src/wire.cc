// Shared checks of the message adapters (see internal/wire.h), and
// CallError::ToResult.
#include "internal/wire.h"

#include <set>
#include <utility>
#include <vector>

namespace taskledger {

ToolResult CallError::ToResult() const {
  std::string text = "error: the call";
  if (!name.empty()) text += " to " + name;
  text += " was not executed: " + message;
  return ToolResult{call_id, std::move(text), true};
}

namespace adapters_internal {

const nlohmann::json* Field(const nlohmann::json& obj, std::string_view name) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(name);
  return it == obj.end() ? nullptr : &*it;
}

const std::string* StringField(const nlohmann::json& obj, std::string_view name) {
  const nlohmann::json* f = Field(obj, name);
  return f && f->is_string() ? &f->get_ref<const std::string&>() : nullptr;
}

std::string Dump(const nlohmann::json& v) {
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status CheckArguments(const nlohmann::json& arguments) {
  if (!arguments.is_object()) {
    return Status::InvalidArgument(std::string("arguments must be a JSON object, got ") +
                                   arguments.type_name());
  }
  // Iterative, so that the check itself cannot exhaust the stack.
  std::vector<std::pair<const nlohmann::json*, int>> pending{{&arguments, 1}};
  while (!pending.empty()) {
    auto [node, depth] = pending.back();
    pending.pop_back();
    if (depth > kMaxArgumentDepth) {
      return Status::InvalidArgument("arguments nest deeper than " +
                                     std::to_string(kMaxArgumentDepth) + " levels");
    }
    for (const auto& child : *node) {
      if (child.is_structured()) pending.emplace_back(&child, depth + 1);
    }
  }
  return Status::Ok();
}

Result<nlohmann::json> ArgumentsFromText(std::string_view text) {
  if (text.empty()) return nlohmann::json::object();
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string why = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, ..." -> "parse error at ..."
    if (auto pos = why.find("] "); pos != std::string::npos) why.erase(0, pos + 2);
    return Status::InvalidArgument("arguments are not valid JSON (" + why + ")");
  }
  if (Status s = CheckArguments(parsed); !s.ok()) return s;
  return parsed;
}

void AddCall(ParsedCalls& out, std::string id, std::string name, Result<nlohmann::json> arguments,
             std::string raw_arguments) {
  if (name.empty()) {
    out.errors.push_back({std::move(id), "", std::move(raw_arguments), "the tool name is missing"});
  } else if (!arguments.has_value()) {
    out.errors.push_back(
        {std::move(id), std::move(name), std::move(raw_arguments), arguments.error().message()});
  } else {
    out.calls.push_back({std::move(id), std::move(name), std::move(arguments).value()});
  }
}

Status CheckUniqueIds(const ParsedCalls& parsed) {
  std::set<std::string_view> seen;
  for (const ToolCall& c : parsed.calls) {
    if (!seen.insert(c.id).second) return Status::InvalidArgument("duplicate call id " + c.id);
  }
  for (const CallError& e : parsed.errors) {
    if (!seen.insert(e.call_id).second) {
      return Status::InvalidArgument("duplicate call id " + e.call_id);
    }
  }
  return Status::Ok();
}

Result<std::string> ContentText(const nlohmann::json& content, std::string_view where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    return Status::InvalidArgument(std::string(where) + " must be a string or an array of blocks");
  }
  std::string text;
  for (const auto& block : content) {
    const std::string* type = StringField(block, "type");
    if (!type) {
      return Status::InvalidArgument(std::string(where) + " holds a block without a type");
    }
    if (!text.empty()) text += '\n';
    const std::string* body = StringField(block, "text");
    if ((*type == "text" || *type == "input_text" || *type == "output_text") && body) {
      text += *body;
    } else {
      text += "[" + *type + " content]";
    }
  }
  return text;
}

}  // namespace adapters_internal
}  // namespace taskledger
