// GatingProxy: a rule's confirm(question) put to the user through MCP
// elicitation (see ProxyOptions::elicitation_timeout_ms in
// taskledger/mcp_proxy/proxy.h).
//
// The proxy sends `elicitation/create` to the client under an id of its own
// ("taskledger-elicit-N") and pumps its loop until the answer comes back:
// messages keep flowing both ways meanwhile, the answer is taken out of the
// client's stream by DispatchFromClient (it never reaches the server), and
// further tools/call requests wait their turn as they do while a call runs.
// Only an accept whose content says confirm=true is a yes; anything else
// (decline, cancel, an error, a malformed answer, the timeout, the client
// cancelling the call or leaving, the proxy stopping) is a no, with the
// reason the client is then told.
#include <chrono>

#include "internal/impl.h"

namespace taskledger::mcp {
namespace {

using Clock = std::chrono::steady_clock;

// Why an elicitation answer is not a yes; nullopt when it is one.
std::optional<std::string> Refusal(const nlohmann::json& response) {
  auto error = response.find("error");
  if (error != response.end()) {
    std::string message =
        error->is_object() && error->contains("message") && error->at("message").is_string()
            ? error->at("message").get<std::string>()
            : error->dump();
    return "the client could not ask the user (" + message + ")";
  }
  auto result = response.find("result");
  if (result == response.end() || !result->is_object()) {
    return "the client's answer to the confirmation request was malformed";
  }
  const nlohmann::json action = result->value("action", nlohmann::json());
  if (action == "decline") return "the user declined";
  if (action == "cancel") return "the user dismissed the question without answering";
  if (action != "accept") return "the client's answer to the confirmation request was malformed";
  auto content = result->find("content");
  if (content == result->end() || !content->is_object()) {
    return "the user accepted the question but gave no answer";
  }
  auto confirm = content->find("confirm");
  if (confirm == content->end() || !confirm->is_boolean()) {
    return "the user accepted the question but gave no yes/no answer";
  }
  if (!confirm->get<bool>()) return "the user answered no";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> GatingProxy::Impl::Elicit(const ToolCall& call,
                                                     const std::string& question,
                                                     const nlohmann::json& request_id) {
  const nlohmann::json id = "taskledger-elicit-" + std::to_string(next_elicitation++);
  nlohmann::json schema = {
      {"type", "object"},
      {"properties",
       {{"confirm",
         {{"type", "boolean"},
          {"title", "Allow " + call.tool + "?"},
          {"description", "Yes lets this one call of " + call.tool + " run."}}}}},
      {"required", {"confirm"}}};
  SendToClient({{"jsonrpc", "2.0"},
                {"id", id},
                {"method", "elicitation/create"},
                {"params", {{"message", question}, {"requestedSchema", std::move(schema)}}}});
  ++report.elicitations;
  eliciting = PendingElicitation{id.dump(), request_id.dump(), std::nullopt, false};
  const auto start = Clock::now();
  std::optional<std::string> refused;
  while (true) {
    if (eliciting->response) {
      refused = Refusal(*eliciting->response);
      break;
    }
    if (eliciting->call_cancelled) {
      refused = "the client cancelled the call while the user was being asked";
      break;
    }
    if (stop_requested) {
      refused = "the proxy was stopped while the user was being asked";
      break;
    }
    if (!client_reading || !client_writable) {
      refused = "the client left while the user was being asked";
      break;
    }
    if (options.elicitation_timeout_ms > 0 &&
        Clock::now() - start >= std::chrono::milliseconds(options.elicitation_timeout_ms)) {
      refused = "the user did not answer within " + std::to_string(options.elicitation_timeout_ms) +
                " ms";
      // The question is void now; the client may take it down.
      SendToClient({{"jsonrpc", "2.0"},
                    {"method", "notifications/cancelled"},
                    {"params", {{"requestId", id}, {"reason", *refused}}}});
      break;
    }
    Pump(50);
  }
  eliciting.reset();
  if (!refused) ++report.elicitations_accepted;
  if (options.metrics != nullptr) options.metrics->RecordElicitation(!refused);
  return refused;
}

}  // namespace taskledger::mcp
