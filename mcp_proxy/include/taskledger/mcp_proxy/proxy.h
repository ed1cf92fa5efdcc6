// GatingProxy: an MCP (Model Context Protocol) stdio proxy that puts the task
// ledger, the policy gate and the write-before-execute command ledger in front
// of any MCP server, so an unmodified MCP client gets all three.
//
// Both sides speak JSON-RPC 2.0, one message per line. The proxy starts the
// server as a child process (or reaches it over Streamable HTTP,
// `upstream_url`) and relays every message untouched (same bytes), except:
//   - tools/call requests are gated one at a time, in arrival order (a call
//     decided later sees the outcome of the calls before it). A call the gate
//     does not allow never reaches the server: the client gets a tool result
//     with isError true and the reason. The session writes through its
//     command ledger (SessionOptions::commands, e.g. McpCommandOptions): an
//     allowed environment-changing call is reserved (with its decision) and
//     leased before it is forwarded with its idempotency key in
//     params._meta["taskledger/idempotencyKey"], and its outcome is recorded
//     after (no answer, a server exit or a cancellation: uncertain). Every
//     call's output is extracted into the ledger and a turn is committed per
//     call.
//   - the rendered task state is offered as the resource `state_uri` and the
//     prompt `state_prompt`: merged into the first page of the server's
//     resources/list and prompts/list results (or answered by the proxy if the
//     server has no such capability), answered by the proxy for resources/read
//     and prompts/get, and advertised in the initialize result.
//   - batches (JSON arrays) are refused: gating works on single messages.
// Malformed or oversize client messages get a JSON-RPC error; a server that
// exits fails every request still waiting on it with a JSON-RPC error. On any
// exit the proxy closes the server's stdin, waits `shutdown_grace_ms`, then
// terminates and finally kills the server's process group, and reaps it.
//
// Not thread-safe: one proxy runs on one thread with its Session (see
// session.h), which must outlive it. Run() ignores SIGPIPE
// for the process (a vanished reader must not kill the proxy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "taskledger/base/status.h"
#include "taskledger/commands/command_ledger.h"
#include "taskledger/mcp_proxy/metrics.h"
#include "taskledger/render/state_block.h"
#include "taskledger/session/session.h"

namespace taskledger::mcp {

struct ProxyOptions {
  // argv of the MCP server; argv[0] is looked up in PATH. Required unless
  // `upstream_url` is set.
  std::vector<std::string> server_command;
  // An MCP server reached over Streamable HTTP (http:// or https://) instead
  // of a child process; `upstream_headers` go with every request to it (e.g.
  // {"Authorization", "Bearer ..."}). Its session ends (DELETE) with the run.
  std::string upstream_url;
  std::vector<std::pair<std::string, std::string>> upstream_headers;
  // Longest message accepted from either side, in bytes without the newline.
  size_t max_message_bytes = 16u << 20;
  // How long a forwarded tools/call may wait for its answer before it is
  // answered with an error and recorded as uncertain. 0: no limit.
  int64_t call_timeout_ms = 300'000;
  // A rule's confirm(question) when the client declared the elicitation
  // capability at initialize: the proxy asks the user with
  // `elicitation/create` (the question, one required boolean `confirm`) and
  // waits this long for the answer (0: no limit). Accepted with confirm=true:
  // the user's yes is recorded bound to that call (tool and arguments) and
  // the call is gated again, so it runs if the yes was all the rule wanted.
  // Declined, cancelled, unanswered in time, or the client gone: the call
  // does not run and the client is told why. A client without the capability
  // gets the confirm decision's text as the tool result, as before.
  int64_t elicitation_timeout_ms = 600'000;
  // After the client leaves or on an error: how long the server gets to exit
  // on its own after its stdin closes, and again after SIGTERM, before SIGKILL.
  int64_t shutdown_grace_ms = 2'000;
  std::string state_uri = "taskledger://state";
  std::string state_prompt = "taskledger_state";
  StateBlockOptions state_block{StateBlockFormat::kMarkdown, false, 0};
  // Diagnostics (one line each, no newline); default: stderr.
  std::function<void(std::string_view)> log;
  // One structured record per gated tools/call, after its turn is committed
  // and before the client is answered: {"ts_ms", "conversation", "tenant",
  // "call_id", "tool", "decision", "rule", "reason", "executed",
  // "command_key", "command_state", "forwarded", "uncertain", "latency_us",
  // and "elicitation" ("yes" / "no: why") when the user was asked}. Unset:
  // none. Called on the proxy's thread.
  std::function<void(const nlohmann::json&)> call_log;
  // Counters shared with a MetricsEndpoint (metrics.h); not owned, must
  // outlive the run. Null: none.
  ProxyMetrics* metrics = nullptr;
};

// How a run ended, and what went through.
struct ProxyReport {
  enum class End {
    kClientClosed,  // the client closed its side (or the proxy was signalled)
    kServerExited,  // the server exited or closed its stdout first
  };
  End end = End::kClientClosed;
  std::string detail;           // e.g. "server exited with status 3"
  int server_wait_status = -1;  // as from waitpid; -1 if not reaped
  uint64_t client_messages = 0, server_messages = 0;
  uint64_t calls_forwarded = 0;        // tools/call that reached the server
  uint64_t calls_blocked = 0;          // tools/call the gate did not let through
  uint64_t calls_uncertain = 0;        // forwarded calls whose outcome is unknown
  uint64_t malformed = 0;              // messages refused as malformed or oversize
  uint64_t elicitations = 0;           // confirmations asked of the user (elicitation/create)
  uint64_t elicitations_accepted = 0;  // of those, answered yes
};

// How a proxy's session writes through the command ledger on `store` under
// `run`, lease holder `worker_id`. The step of a call is its JSON-RPC request
// id ("call-<id>"): the same request sent again (same id, tool and
// arguments) returns the recorded outcome instead of reaching the server
// twice, while a new request with the same arguments is a new command. A
// client that reuses request ids on the same conversation across
// connections therefore gets recorded outcomes for repeats: give each
// connection its own conversation (the verb's default). `lookup` settles a
// call whose outcome is unknown (tool_binding.h); unset, MCP offers no lookup
// of past calls, so it answers Unknown and such a call stays uncertain for
// an operator (`taskledger commands reconcile`).
SessionCommandOptions McpCommandOptions(CommandStore& store, RunId run, std::string worker_id,
                                        std::function<LookupResult(const Command&)> lookup = {});

class GatingProxy {
 public:
  // `session` must outlive the proxy. It must write through a command ledger
  // (opened with SessionOptions::commands.store set, e.g. McpCommandOptions):
  // Run() refuses with InvalidArgument otherwise, since a proxied write must
  // be a command.
  GatingProxy(Session& session, ProxyOptions options);
  ~GatingProxy();
  GatingProxy(const GatingProxy&) = delete;
  GatingProxy& operator=(const GatingProxy&) = delete;

  // Starts the server and relays between the client's (`client_in`,
  // `client_out`) descriptors and it until either side is gone, then stops
  // the server. The descriptors are not closed (they may be one socket).
  // Errors: InvalidArgument (no server command or URL, or a bad URL),
  // Unavailable (the server could not be started); every
  // problem after the start ends the run and is described in the report.
  Result<ProxyReport> Run(int client_in, int client_out);

  // Stops Run() from another thread or a signal handler (async-signal-safe):
  // it ends as if the client had closed.
  void RequestStop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The text of the state resource and prompt: the session's working state
// rendered with `options`, leaving out what the session's pack.json "render"
// marks internal and redacting what it marks (RenderVisibility; an invalid
// section renders nothing but the error). Exposed for tests and the CLI.
std::string RenderedState(const Session& session, const StateBlockOptions& options);

}  // namespace taskledger::mcp
