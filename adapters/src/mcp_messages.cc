// MCP tools/call adapter (see mcp_messages.h for the wire shapes).
#include "taskledger/adapters/mcp_messages.h"

#include "internal/wire.h"

namespace taskledger::mcp {
namespace {

using namespace adapters_internal;

// MCP requires a string or integer id, never null.
Status CheckEnvelope(const nlohmann::json& message, const char* what) {
  if (!message.is_object())
    return Status::InvalidArgument(std::string(what) + " is not a JSON object");
  const std::string* version = StringField(message, "jsonrpc");
  if (!version || *version != "2.0") {
    return Status::InvalidArgument(std::string(what) + " is not JSON-RPC 2.0");
  }
  const nlohmann::json* id = Field(message, "id");
  if (!id || !(id->is_string() || id->is_number_integer())) {
    return Status::InvalidArgument(std::string(what) + " id must be a string or an integer");
  }
  return Status::Ok();
}

Result<ParsedRequest> ParseRequest(const nlohmann::json& request) {
  if (Status s = CheckEnvelope(request, "request"); !s.ok()) return s;
  const std::string* method = StringField(request, "method");
  if (!method || *method != "tools/call") {
    return Status::InvalidArgument("request method is not tools/call");
  }
  const nlohmann::json* params = Field(request, "params");
  if (!params || !params->is_object())
    return Status::InvalidArgument("tools/call has no params object");
  ParsedRequest out{request["id"], {}};
  const std::string* name = StringField(*params, "name");
  const nlohmann::json* args = Field(*params, "arguments");
  if (!args) {
    AddCall(out.calls, CallIdOf(out.request_id), name ? *name : "", nlohmann::json::object(), "");
  } else {
    Status valid = CheckArguments(*args);
    AddCall(out.calls, CallIdOf(out.request_id), name ? *name : "",
            valid.ok() ? Result<nlohmann::json>(*args) : Result<nlohmann::json>(valid),
            Dump(*args));
  }
  return out;
}

Result<ParsedResponse> ParseResponse(const nlohmann::json& response) {
  if (Status s = CheckEnvelope(response, "response"); !s.ok()) return s;
  ParsedResponse out{response["id"], {}};
  out.result.call_id = CallIdOf(out.request_id);
  if (const nlohmann::json* error = Field(response, "error")) {
    const nlohmann::json* code = Field(*error, "code");
    const std::string* message = StringField(*error, "message");
    out.result.is_error = true;
    out.result.content = "JSON-RPC error";
    if (code && code->is_number_integer()) out.result.content += " " + Dump(*code);
    if (message) out.result.content += ": " + *message;
    return out;
  }
  const nlohmann::json* result = Field(response, "result");
  if (!result || !result->is_object()) {
    return Status::InvalidArgument("response has neither a result object nor an error");
  }
  const nlohmann::json* content = Field(*result, "content");
  if (!content || !content->is_array())
    return Status::InvalidArgument("result content is not an array");
  Result<std::string> text = ContentText(*content, "result content");
  if (!text.has_value()) return text.error();
  out.result.content = std::move(text).value();
  const nlohmann::json* is_error = Field(*result, "isError");
  if (is_error && !is_error->is_boolean())
    return Status::InvalidArgument("isError is not a boolean");
  out.result.is_error = is_error && is_error->get<bool>();
  return out;
}

}  // namespace

std::string CallIdOf(const nlohmann::json& request_id) {
  return request_id.is_string() ? request_id.get<std::string>() : Dump(request_id);
}

Result<ParsedRequest> ParseToolsCall(const nlohmann::json& request) {
  return Guarded<ParsedRequest>("parsing an MCP tools/call request",
                                [&] { return ParseRequest(request); });
}

nlohmann::json ProduceToolsCall(const nlohmann::json& request_id, const ToolCall& call) {
  return {{"jsonrpc", "2.0"},
          {"id", request_id},
          {"method", "tools/call"},
          {"params", {{"name", call.tool}, {"arguments", call.arguments}}}};
}

Result<ParsedResponse> ParseToolsCallResult(const nlohmann::json& response) {
  return Guarded<ParsedResponse>("parsing an MCP tools/call response",
                                 [&] { return ParseResponse(response); });
}

nlohmann::json ProduceToolsCallResult(const nlohmann::json& request_id, const ToolResult& result) {
  nlohmann::json content = nlohmann::json::array();
  content.push_back({{"type", "text"}, {"text", result.content}});
  return {{"jsonrpc", "2.0"},
          {"id", request_id},
          {"result", {{"content", std::move(content)}, {"isError", result.is_error}}}};
}

}  // namespace taskledger::mcp
