// GatingProxy: one tools/call through the gate, the command ledger and the
// server, then into the ledger (see taskledger/mcp_proxy/proxy.h).
//
// The call runs inside Session::HandleToolCall, whose executor forwards it and
// pumps the proxy's loop until the server answers: messages keep flowing both
// ways meanwhile, and further tools/call requests wait in the queue, so gating
// is strictly sequential and each decision sees the outcome of the one before.
//
// A write is a command of the session's command ledger (the proxy's session
// always has one, see proxy.h): the session reserves it with its decision,
// leases and settles it, and the executor only forwards the call with the
// idempotency key the session hands it; an unanswered call is a Timeout,
// which the session records as uncertain (call record and command alike), and
// the session's lookup reconciles it. The same request sent again is the
// same command (McpCommandOptions' step), so it returns the recorded outcome
// and is not forwarded twice.
#include <chrono>

#include "internal/impl.h"
#include "taskledger/adapters/mcp_messages.h"

namespace taskledger::mcp {
namespace {

using Clock = std::chrono::steady_clock;

// What a server's tools/call response means for the ledger: the structured
// content if the tool gave one (extraction mappings address it), else the
// text the model reads.
ToolOutput OutputOf(const nlohmann::json& response) {
  ToolOutput out;
  if (auto err = response.find("error"); err != response.end()) {
    std::string code = err->is_object() && err->contains("code") ? err->at("code").dump() : "?";
    std::string message =
        err->is_object() && err->contains("message") && err->at("message").is_string()
            ? err->at("message").get<std::string>()
            : err->dump();
    out.output = "MCP error " + code + ": " + message;
    out.error = true;
    return out;
  }
  auto parsed = ParseToolsCallResult(response);
  if (!parsed) {
    out.output = "malformed tools/call result: " + parsed.error().message();
    out.error = true;
    return out;
  }
  out.error = parsed->result.is_error;
  const nlohmann::json& result = response["result"];
  auto structured = result.find("structuredContent");
  if (structured != result.end() && structured->is_object()) {
    out.output = *structured;
  } else {
    out.output = parsed->result.content;
  }
  return out;
}

}  // namespace

void GatingProxy::Impl::HandleToolsCall(const QueuedCall& queued) {
  const nlohmann::json& request = queued.request;
  const nlohmann::json request_id =
      request.contains("id") ? request["id"] : nlohmann::json(nullptr);
  auto parsed = ParseToolsCall(request);
  if (!parsed) {
    ReplyError(request_id, kInvalidParams, parsed.error().message());
    return;
  }
  if (!parsed->calls.errors.empty()) {  // unusable arguments: the model is told what to fix
    SendToClient(ProduceToolsCallResult(request_id, parsed->calls.errors.front().ToResult()));
    return;
  }
  const ToolCall& call = parsed->calls.calls.front();
  const auto started = Clock::now();
  const uint64_t forwarded_before = report.calls_forwarded;
  const uint64_t uncertain_before = report.calls_uncertain;
  std::string elicited;  // "yes" / "no: why" when the user was asked

  std::optional<std::string> raw_response;  // the server's answer, relayed as it came
  bool client_cancelled = false;
  // Forwards `line` (a request with id `forward_id`) and pumps the loop until
  // the server answers; without an answer, says why (the call may or may not
  // have taken effect).
  auto forward = [&](const std::string& line, const nlohmann::json& forward_id) {
    const std::string key = forward_id.dump();
    in_flight = InFlight{key, std::nullopt, {}, false};
    SendToServer(line);
    ++report.calls_forwarded;
    const auto start = Clock::now();
    std::string ambiguous;
    std::optional<Clock::time_point> client_gone_at;
    while (!in_flight->response) {
      auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
      if (in_flight->cancelled) {
        ambiguous = "the client cancelled the call before the server answered";
        client_cancelled = true;
        break;
      }
      if (server_gone) {
        server->Stop(options.shutdown_grace_ms);  // reaped, so its exit status can be told
        ambiguous = "the MCP server " + server->Describe() + " before answering";
        break;
      }
      if (stop_requested) {
        ambiguous = "the proxy was stopped before the server answered";
        break;
      }
      if (options.call_timeout_ms > 0 && waited >= options.call_timeout_ms) {
        ambiguous = "no answer from the MCP server within " +
                    std::to_string(options.call_timeout_ms) + " ms";
        SendToServer(nlohmann::json{{"jsonrpc", "2.0"},
                                    {"method", "notifications/cancelled"},
                                    {"params", {{"requestId", forward_id}, {"reason", ambiguous}}}}
                         .dump());
        break;
      }
      // A client that left cannot read the answer, but the outcome is still
      // worth recording: wait for it, within the shutdown grace.
      if ((!client_reading || !client_writable) && !client_gone_at) client_gone_at = Clock::now();
      if (client_gone_at &&
          Clock::now() - *client_gone_at >= std::chrono::milliseconds(options.shutdown_grace_ms)) {
        ambiguous = "the client left and the server did not answer within the grace period";
        break;
      }
      Pump(50);
    }
    InFlight done = std::move(*in_flight);
    in_flight.reset();
    if (!done.response) {
      abandoned[key] = true;
      ++report.calls_uncertain;
    }
    return std::pair{std::move(done), std::move(ambiguous)};
  };

  // The session reserves and leases a write, then hands over its idempotency
  // key, which goes to the server in params._meta.
  auto execute_with_key = [&](const ProposedCall&, const ToolContext& ctx) -> Result<ToolOutput> {
    if (server_gone) return Status::Unavailable("the MCP server is not running");
    std::string line = queued.line;
    if (!ctx.idempotency_key.empty()) {
      nlohmann::json forwarded = request;
      nlohmann::json& params = forwarded["params"];
      if (!params.contains("_meta") || !params["_meta"].is_object())
        params["_meta"] = nlohmann::json::object();
      params["_meta"]["taskledger/idempotencyKey"] = ctx.idempotency_key;
      line = forwarded.dump();
    }
    auto [done, ambiguous] = forward(line, request_id);
    if (!done.response) return Status::Timeout(ambiguous);
    raw_response = std::move(done.response_line);
    return OutputOf(*done.response);
  };

  // Approvals: before a write is gated, what an operator approved since runs
  // (once: the session leases it) as a request of the proxy's own, and what
  // an operator denied is reported. A call with the same tool and arguments
  // as one held for approval whose outcome the client has not been given yet
  // (the retry after "waits for approval") is handled as that held call, so
  // the session answers it from the command store (approved and run: its
  // result; denied: the operator's reason; still held: that it waits), in
  // this process or in one started after a restart, and makes no new command.
  ToolCall gated = call;
  if (session.ClassOf(call.tool).writes()) {
    auto run_approved = [&](const ProposedCall& c, const ToolContext& ctx) -> Result<ToolOutput> {
      if (server_gone) return Status::Unavailable("the MCP server is not running");
      const nlohmann::json id = "taskledger-approved-" + ctx.command_key;
      nlohmann::json params = {{"name", c.tool}, {"arguments", c.arguments}};
      params["_meta"] = {{"taskledger/idempotencyKey", ctx.idempotency_key}};
      auto [done, ambiguous] = forward(
          nlohmann::json{
              {"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", params}}
              .dump(),
          id);
      if (!done.response) return Status::Timeout(ambiguous);
      return OutputOf(*done.response);
    };
    auto resumed = session.ResumeApproved(ContextToolExecutor(run_approved));
    if (!resumed) Log("cannot run the approved commands: " + resumed.error().ToString());
    if (resumed) {
      for (const CallResult& r : *resumed) {
        if (r.command) Log("operator-settled command " + r.command->command_key + ": " + r.message);
      }
    }
    if (std::optional<std::string> held = HeldCallFor(call)) gated.id = *held;
  }

  CallResult result = session.HandleToolCall(gated, ContextToolExecutor(execute_with_key));
  // A rule wants the user's yes and the client can ask for it: ask, and gate
  // the call again with the yes recorded (elicit.cc). Asked once per call.
  if (!result.executed && result.decision.outcome == Outcome::kConfirm && client_elicits) {
    const std::string question = result.decision.reason;
    std::optional<std::string> refused = Elicit(call, question, request_id);
    elicited = refused ? "no: " + *refused : "yes";
    if (!refused) {
      Status recorded = session.RecordConfirmation(call, "yes (answered through MCP elicitation)",
                                                   "user:elicitation");
      if (recorded.ok()) {
        ++report.calls_blocked;  // the first decision; the second is counted below
        result = session.HandleToolCall(gated, ContextToolExecutor(execute_with_key));
      } else {
        refused = "the user's yes could not be recorded (" + recorded.ToString() + ")";
      }
    }
    if (refused) {
      Log("confirmation of " + call.tool + " refused: " + *refused);
      result.message = "Not executed: " + call.tool + " needs the user's confirmation (" +
                       result.decision.rule_id + ": " + question + "), and " + *refused +
                       ". The call was not made; do not retry it unless the user asks for it.";
      result.message_is_error = true;
    }
  }
  // Committed before the client hears back: a client that has its answer can
  // find the call in `taskledger audit`.
  auto committed = session.EndTurn();
  if (!committed)
    Log("cannot commit the turn of call " + call.tool + ": " + committed.error().ToString());
  Observe(call, result,
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started).count(),
          report.calls_forwarded > forwarded_before, report.calls_uncertain > uncertain_before,
          elicited);
  if (!result.executed) {
    ++report.calls_blocked;
    SendToClient(ProduceToolsCallResult(
        request_id, ToolResult{call.id, result.message, result.message_is_error}));
  } else if (raw_response) {
    SendRawToClient(*raw_response);
  } else if (!client_cancelled) {
    ReplyError(request_id, kInternalError, result.message);
  }
}

}  // namespace taskledger::mcp
