// HttpListener: the gating proxy served over MCP's Streamable HTTP transport
// (protocol revisions 2025-03-26 and 2025-06-18), so HTTP MCP clients (IDEs,
// remote agents) reach a gated server as stdio clients do.
//
// One endpoint path (default /mcp):
//   POST   one JSON-RPC message. An initialize request opens an MCP session:
//          the answer carries a fresh `Mcp-Session-Id`, and the session gets
//          a GatingProxy of its own (its own Session, i.e. its own ledger
//          conversation, and its own server) made by the factory. Every other
//          message names its session in `Mcp-Session-Id` (400 without, 404
//          for an unknown or ended one). Notifications and responses: 202.
//          Requests: the JSON-RPC answer as application/json, or, when the
//          client accepts text/event-stream, an SSE stream that carries the
//          server's messages until the answer and then ends.
//   GET    the session's SSE stream for the server's own requests and
//          notifications (one at a time: 409 for a second). Events carry ids;
//          a reconnection with `Last-Event-ID` gets what it missed, within
//          the last `replay_events` events.
//   DELETE ends the session: its client side closes, the proxy answers what
//          it still owes within its grace period and stops its server.
// A session idle for `idle_timeout_ms` ends the same way; its id is then
// unknown (404).
// Refused before anything reaches a proxy: a wrong or missing bearer token
// when `require_token` is set (401), an `Origin` that is neither loopback nor
// listed (403: the spec's DNS-rebinding defence), a body over
// `max_body_bytes` (413), a content type other than JSON (415), invalid
// JSON, a batch or a non-object (400, with a JSON-RPC error body), an
// unsupported `MCP-Protocol-Version` (400), more than `max_sessions` open
// sessions (503).
//
// Thread-safety: Serve() blocks on the calling thread; requests are handled on
// a pool of worker threads, each session's proxy runs on a thread of its own
// (GatingProxy is single-threaded; the session bridge serialises what reaches
// it). Stop() may be called from any thread, not from a signal handler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "taskledger/base/status.h"
#include "taskledger/mcp_proxy/proxy.h"
#include "taskledger/session/session.h"

namespace taskledger::mcp {

// What one MCP session runs with. `session` (writing through a command
// ledger, see GatingProxy) is owned by the MCP session and dropped when it
// ends; `options` says which server to run.
struct GatedSession {
  std::unique_ptr<Session> session;
  ProxyOptions options;
};
// Makes the parts of a new MCP session. `mcp_session_id` is the id the client
// will send; `authorization` the client's Authorization header ("" if none),
// e.g. to pass on to an HTTP upstream. An error refuses the initialize (500
// with the error's text).
using GatedSessionFactory = std::function<Result<GatedSession>(const std::string& mcp_session_id,
                                                               const std::string& authorization)>;

struct ListenerOptions {
  std::string host = "127.0.0.1";  // loopback unless asked otherwise
  int port = 0;                    // 0: any free port (Bind() says which)
  std::string path = "/mcp";
  // When set, every request must carry `Authorization: Bearer <token>`.
  std::string require_token;
  // Origins allowed besides loopback ones (http(s)://localhost, 127.0.0.1,
  // [::1], any port), exactly as the browser sends them.
  std::vector<std::string> allowed_origins;
  size_t max_sessions = 64;
  size_t max_body_bytes = 16u << 20;
  int worker_threads = 32;  // each open SSE stream holds one
  // An SSE comment is sent after this much silence, so a vanished client is
  // noticed and intermediaries keep the stream open.
  int64_t keepalive_ms = 15'000;
  size_t replay_events = 256;
  // A session with no request for this long (none in progress, no GET stream
  // open) is ended as DELETE would end it: its proxy stops its server and its
  // Session is dropped; its id then answers 404, and the client starts a new
  // session with initialize, as the spec says. 0: sessions never expire.
  int64_t idle_timeout_ms = 30 * 60'000;
  // Diagnostics (one line each); default: stderr. Called from any thread.
  std::function<void(std::string_view)> log;
};

struct ListenerReport {
  uint64_t sessions_opened = 0;
  uint64_t sessions_ended = 0;
  uint64_t sessions_expired = 0;  // of those, ended for idleness (idle_timeout_ms)
  uint64_t requests = 0;          // HTTP requests on the endpoint
  uint64_t refused = 0;           // answered 4xx/5xx before reaching a proxy
  // Summed over the ended sessions' proxies.
  uint64_t calls_forwarded = 0, calls_blocked = 0, calls_uncertain = 0;
};

class HttpListener {
 public:
  HttpListener(ListenerOptions options, GatedSessionFactory factory);
  ~HttpListener();  // Stop(), then ends every session
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Binds host:port; returns the port. Unavailable if it cannot be bound.
  Result<int> Bind();
  // Serves until Stop(), then ends every open session (each proxy stops its
  // server) and returns. REQUIRES: Bind() succeeded.
  Result<ListenerReport> Serve();
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace taskledger::mcp
