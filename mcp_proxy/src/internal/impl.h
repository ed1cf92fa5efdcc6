// The state of one GatingProxy run, shared by its three source files:
// proxy.cc (the poll loop and the routing of messages), calls.cc
// (gating and executing tools/call) and state.cc (the state
// resource and prompt, and the results the proxy amends). Not thread-safe,
// except `stop_requested` and the wake pipe (see RequestStop).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "internal/framing.h"
#include "internal/process.h"
#include "taskledger/mcp_proxy/proxy.h"

namespace taskledger::mcp {

// JSON-RPC error codes used by the proxy.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;

// What the proxy does with the server's response to a client request.
enum class Amend { kNone, kInitialize, kResourcesList, kPromptsList };

struct GatingProxy::Impl {
  struct QueuedCall;
  Impl(Session& s, ProxyOptions o);
  ~Impl();

  // --- mcp_proxy.cc: the loop -------------------------------------------
  Result<ProxyReport> Run(int in, int out);
  // Polls once (up to timeout_ms) and handles whatever is ready.
  void Pump(int timeout_ms);
  void DispatchFromClient(const proxy_internal::Line& line);
  void DispatchFromServer(const proxy_internal::Line& line);
  void SendToClient(const nlohmann::json& message);
  void SendRawToClient(const std::string& line);
  void SendToServer(const std::string& line);
  void ReplyError(const nlohmann::json& id, int code, const std::string& message);
  // Answers every request still waiting on the server with an error.
  void FailOutstanding(const std::string& why);
  void Log(const std::string& line) const;
  bool server_alive() const { return !server_gone; }

  // --- calls.cc: tools/call -----------------------------------
  // Gates, executes (if allowed), records and answers one tools/call request.
  void HandleToolsCall(const QueuedCall& queued);

  // --- observe.cc: the call log and the metrics -------------------------
  // Reports one gated call to options.call_log and options.metrics.
  void Observe(const ToolCall& call, const CallResult& result, int64_t duration_us, bool forwarded,
               bool uncertain, const std::string& elicited);

  // --- approvals.cc: calls held for an operator --------------------------
  // The call id of the command held for approval that `call` retries (same
  // tool and arguments, another request id), read from the command store:
  // one still held, approved, running or settled whose outcome the client
  // has not been given on a retry yet. nullopt if none (or the store cannot
  // be read: the call is then gated as a new one, and the failure logged).
  std::optional<std::string> HeldCallFor(const ToolCall& call);

  // --- elicit.cc: a rule's confirm asked through elicitation ----
  // The user's answer to `question` about `call` (the client's tools/call
  // `request_id`): nullopt for a yes, else why it is not one.
  std::optional<std::string> Elicit(const ToolCall& call, const std::string& question,
                                    const nlohmann::json& request_id);

  // --- state.cc: the state resource and prompt ----------------
  nlohmann::json StateResourceEntry() const;
  nlohmann::json StatePromptEntry() const;
  // Answers resources/read or prompts/get for the state; false if `request`
  // is not about it.
  bool AnswerStateRequest(const std::string& method, const nlohmann::json& request);
  // The server's response to a request marked `amend`, amended.
  nlohmann::json AmendResponse(Amend amend, nlohmann::json response);

  Session& session;
  ProxyOptions options;
  ProxyReport report;

  std::unique_ptr<proxy_internal::Upstream> server;
  int client_in = -1, client_out = -1;
  int wake_read = -1, wake_write = -1;  // self-pipe for RequestStop
  std::atomic<bool> stop_requested{false};
  proxy_internal::LineReader from_client, from_server;
  proxy_internal::WriteQueue to_client, to_server;
  bool client_reading = true;  // client's stdin not yet at EOF
  std::optional<std::chrono::steady_clock::time_point> client_eof_at;
  bool client_writable = true;  // client's stdout still accepts writes
  bool server_gone = false;     // server's stdout closed, or it exited
  bool server_has_resources = false, server_has_prompts = false;

  // Client requests forwarded to the server and not yet answered, by id.dump().
  struct Outstanding {
    nlohmann::json id;
    Amend amend = Amend::kNone;
  };
  std::map<std::string, Outstanding> outstanding;
  // tools/call requests waiting their turn (they are gated one at a time).
  struct QueuedCall {  // declared above
    nlohmann::json request;
    std::string line;  // as received, relayed untouched when no amendment is needed
  };
  std::deque<QueuedCall> queued_calls;

  // The tools/call forwarded to the server and not yet settled.
  struct InFlight {
    std::string key;  // id.dump()
    std::optional<nlohmann::json> response;
    std::string response_line;  // the response as received, to relay untouched
    bool cancelled = false;     // the client sent notifications/cancelled for it
  };
  std::optional<InFlight> in_flight;
  // Ids of calls given up on (timeout, cancellation): a late answer is dropped.
  std::map<std::string, bool> abandoned;

  // The client declared `capabilities.elicitation` in its initialize request.
  bool client_elicits = false;
  // The elicitation/create request sent to the client and not yet answered.
  struct PendingElicitation {
    std::string key;       // its id.dump()
    std::string call_key;  // id.dump() of the tools/call it is about
    std::optional<nlohmann::json> response;
    bool call_cancelled = false;  // the client cancelled that tools/call
  };
  std::optional<PendingElicitation> eliciting;
  uint64_t next_elicitation = 1;
};

}  // namespace taskledger::mcp
