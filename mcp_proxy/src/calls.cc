// GatingProxy: one tools/call through the gate, the command ledger and the
// server, then into the ledger (see taskledger/mcp_proxy/proxy.h).
//
// The call runs inside Session::HandleToolCall, whose executor forwards it and
// pumps the proxy's loop until the server answers: messages keep flowing both
// ways meanwhile, and further tools/call requests wait in the queue, so gating
// is strictly sequential and each decision sees the outcome of the one before.
//
// A write is a command in one of two ways. If the session writes through the
// command ledger itself (opened with SessionOptions::commands; session.run()
// is set), the session reserves, leases and settles it, and the executor only
// forwards the call with the idempotency key the session hands it; an
// unanswered call is a Timeout, which the session records as uncertain (call
// record and command alike), and the session's lookup reconciles it.
// Otherwise the executor drives the proxy's own CommandLedger as below, with
// ProxyOptions::lookup.
#include <chrono>

#include "internal/impl.h"
#include "taskledger/adapters/mcp_messages.h"

namespace taskledger::mcp {
namespace {

using Clock = std::chrono::steady_clock;

// The natural key of what an environment-changing call changes: the first of
// the usual MCP argument names that holds a string.
std::string TargetOf(const nlohmann::json& arguments) {
  for (const char* name : {"path", "destination", "uri", "url", "name", "id"}) {
    auto it = arguments.find(name);
    if (it != arguments.end() && it->is_string()) return it->get<std::string>();
  }
  return {};
}

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

std::string TextOf(const nlohmann::json& output) {
  return output.is_string() ? output.get<std::string>() : output.dump();
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
  const bool writes = session.pack().Classify(call.tool) != ToolClass::kReadOnly;
  const std::string key = request_id.dump();

  std::optional<std::string> raw_response;  // the server's answer, relayed as it came
  bool client_cancelled = false;
  // Forwards `line` and pumps the loop until the server answers; without an
  // answer, says why (the call may or may not have taken effect).
  auto forward = [&](const std::string& line) {
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
                                    {"params", {{"requestId", request_id}, {"reason", ambiguous}}}}
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

  auto execute = [&](const ProposedCall& c) -> Result<ToolOutput> {
    nlohmann::json forwarded = request;
    std::optional<Command> leased;
    if (writes) {
      // Write-before-execute: the command exists and is leased before the
      // server sees the call.
      CommandSpec spec;
      spec.run = options.run;
      spec.step = "turn-" + std::to_string(session.ledger().turn()) + "/call-" + c.id;
      spec.tool = c.tool;
      spec.target = TargetOf(c.arguments);
      spec.arguments = c.arguments;
      // The decision this call was allowed by (already committed with the
      // write-ahead turn, so no longer in the pending one).
      spec.decision = session.last_decision();
      spec.pack_version = session.pack().version();
      ToolBinding binding;
      binding.lookup = options.lookup ? options.lookup : [](const Command&) {
        return LookupResult::Unknown("an MCP server offers no lookup of past calls");
      };
      commands.Bind(c.tool, std::move(binding));
      auto reserved = commands.Reserve(spec);
      if (!reserved)
        return Status::Unavailable("cannot record the command before running it: " +
                                   reserved.error().ToString());
      if (reserved->state != CommandState::kPending && reserved->state != CommandState::kApproved) {
        return Status::FailedPrecondition("the command " + reserved->command_key + " is already " +
                                          std::string(CommandStateName(reserved->state)));
      }
      auto lease = commands.Lease(options.run, reserved->command_key);
      if (!lease)
        return Status::Unavailable("cannot lease the command: " + lease.error().ToString());
      leased = std::move(lease).value();
      nlohmann::json& params = forwarded["params"];
      if (!params.contains("_meta") || !params["_meta"].is_object())
        params["_meta"] = nlohmann::json::object();
      params["_meta"]["taskledger/idempotencyKey"] = leased->idempotency_key;
    }
    if (server_gone) {
      if (leased)
        (void)commands.RecordOutcome(
            *leased, ToolOutcome::Failed("the MCP server is not running; the call was not sent"));
      return Status::Unavailable("the MCP server is not running");
    }

    auto [done, ambiguous] = forward(writes ? forwarded.dump() : queued.line);
    if (!done.response) {
      if (leased) {
        auto recorded = commands.RecordOutcome(*leased, ToolOutcome::Ambiguous(ambiguous));
        if (!recorded)
          Log("cannot record the uncertain outcome of " + c.tool + ": " +
              recorded.error().ToString());
      }
      return Status::Timeout(ambiguous);  // the session records it as uncertain
    }
    raw_response = std::move(done.response_line);
    ToolOutput out = OutputOf(*done.response);
    if (leased) {
      ToolOutcome outcome = out.error ? ToolOutcome::Failed(TextOf(out.output))
                                      : ToolOutcome::Succeeded("mcp:" + leased->idempotency_key,
                                                               (*done.response)["result"]);
      auto recorded = commands.RecordOutcome(*leased, outcome);
      if (!recorded)
        Log("cannot record the outcome of " + c.tool + ": " + recorded.error().ToString());
    }
    return out;
  };

  // The session's own command-ledger path: it hands over the idempotency key.
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
    auto [done, ambiguous] = forward(line);
    if (!done.response) return Status::Timeout(ambiguous);
    raw_response = std::move(done.response_line);
    return OutputOf(*done.response);
  };

  CallResult result = session.run() != nullptr
                          ? session.HandleToolCall(call, ContextToolExecutor(execute_with_key))
                          : session.HandleToolCall(call, ToolExecutor(execute));
  // Committed before the client hears back: a client that has its answer can
  // find the call in `taskledger audit`.
  auto committed = session.EndTurn();
  if (!committed)
    Log("cannot commit the turn of call " + call.tool + ": " + committed.error().ToString());
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
