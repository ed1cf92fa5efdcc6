// GatingProxy: the task state as an MCP resource and prompt, and the server
// results the proxy amends to offer them (initialize, resources/list,
// prompts/list). See taskledger/mcp_proxy/proxy.h.
#include "internal/impl.h"

namespace taskledger::mcp {

std::string RenderedState(const Session& session, const StateBlockOptions& options) {
  // What the pack's pack.json "render" keeps out of the prompt stays out of
  // the resource and the prompt too; a section that does not parse shows
  // nothing rather than everything.
  const nlohmann::json& manifest = session.pack().manifest();
  auto section = manifest.find("render");
  auto visibility =
      RenderVisibility::FromJson(section == manifest.end() ? nlohmann::json() : *section);
  if (!visibility) {
    return "Task state unavailable: the rule pack's render section is invalid (" +
           visibility.error().ToString() + ")";
  }
  StateBlockOptions shown = options;
  if (!visibility->empty()) shown.visibility = &*visibility;
  auto block = RenderStateBlock(session.ledger().working(), session.clock().NowMs(), shown);
  if (!block) return "Task state unavailable: " + block.error().ToString();
  return block->text;
}

namespace {

const char* MimeTypeOf(StateBlockFormat format) {
  switch (format) {
    case StateBlockFormat::kMarkdown:
      return "text/markdown";
    case StateBlockFormat::kXml:
      return "application/xml";
    case StateBlockFormat::kJson:
      return "application/json";
    case StateBlockFormat::kPlain:
      break;
  }
  return "text/plain";
}

constexpr const char* kDescription =
    "The task state taskledger keeps for this conversation: facts, identifiers, constraints and "
    "conditions established by tool results and the user, as of the latest call.";

}  // namespace

nlohmann::json GatingProxy::Impl::StateResourceEntry() const {
  return {{"uri", options.state_uri},
          {"name", options.state_prompt},
          {"title", "Task state (taskledger)"},
          {"description", kDescription},
          {"mimeType", MimeTypeOf(options.state_block.format)}};
}

nlohmann::json GatingProxy::Impl::StatePromptEntry() const {
  return {{"name", options.state_prompt},
          {"title", "Task state (taskledger)"},
          {"description", kDescription},
          {"arguments", nlohmann::json::array()}};
}

bool GatingProxy::Impl::AnswerStateRequest(const std::string& method,
                                           const nlohmann::json& request) {
  const nlohmann::json* params = request.contains("params") ? &request["params"] : nullptr;
  if (!params || !params->is_object()) return false;
  if (method == "resources/read") {
    auto uri = params->find("uri");
    if (uri == params->end() || !uri->is_string() || *uri != options.state_uri) return false;
    nlohmann::json content = {{"uri", options.state_uri},
                              {"mimeType", MimeTypeOf(options.state_block.format)},
                              {"text", RenderedState(session, options.state_block)}};
    SendToClient({{"jsonrpc", "2.0"},
                  {"id", request["id"]},
                  {"result", {{"contents", nlohmann::json::array({content})}}}});
    return true;
  }
  if (method == "prompts/get") {
    auto name = params->find("name");
    if (name == params->end() || !name->is_string() || *name != options.state_prompt) return false;
    nlohmann::json message = {
        {"role", "user"},
        {"content", {{"type", "text"}, {"text", RenderedState(session, options.state_block)}}}};
    SendToClient(
        {{"jsonrpc", "2.0"},
         {"id", request["id"]},
         {"result",
          {{"description", kDescription}, {"messages", nlohmann::json::array({message})}}}});
    return true;
  }
  return false;
}

nlohmann::json GatingProxy::Impl::AmendResponse(Amend amend, nlohmann::json response) {
  auto result = response.find("result");
  if (result == response.end() || !result->is_object()) return response;  // an error: as is
  switch (amend) {
    case Amend::kInitialize: {
      nlohmann::json& caps = (*result)["capabilities"];
      if (!caps.is_object()) caps = nlohmann::json::object();
      server_has_resources = caps.contains("resources");
      server_has_prompts = caps.contains("prompts");
      if (!server_has_resources) caps["resources"] = nlohmann::json::object();
      if (!server_has_prompts) caps["prompts"] = nlohmann::json::object();
      break;
    }
    case Amend::kResourcesList:
    case Amend::kPromptsList: {
      const char* member = amend == Amend::kResourcesList ? "resources" : "prompts";
      nlohmann::json& list = (*result)[member];
      if (!list.is_array()) list = nlohmann::json::array();
      // Only requests without a cursor (the first page) are marked for this.
      nlohmann::json entry =
          amend == Amend::kResourcesList ? StateResourceEntry() : StatePromptEntry();
      list.insert(list.begin(), std::move(entry));
      break;
    }
    case Amend::kNone:
      break;
  }
  return response;
}

}  // namespace taskledger::mcp
