// `taskledger mcp-proxy --rules DIR [--store URL] [--conversation ID]
//      [--listen HOST:PORT [--require-token T]] (-- CMD ... | --upstream URL)`
// runs an MCP server behind the gating proxy (mcp_proxy/proxy.h), so any MCP
// client gets the ledger, the policy gate and the command ledger by talking
// to this instead of the server. The server is a child on stdio (CMD) or a
// Streamable HTTP endpoint (--upstream); the client talks on this process's
// stdin/stdout, or over Streamable HTTP with --listen (http_listener.h: one
// gated session, i.e. one conversation `<conversation>-<session id>`, per
// MCP session). On stdio, stdout belongs to the protocol: everything else
// goes to stderr.
// Exit: 0 the client closed the connection (stdio) or the listener was
// stopped, 1 the server exited first (stdio), 2 bad usage, a broken pack, an
// unreachable store, an address that cannot be bound or a server that cannot
// start. SIGINT, SIGTERM and SIGHUP end the run as if the client had closed.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "audit_html.h"
#include "cli_common.h"
#include "taskledger/commands/memory_command_store.h"
#include "taskledger/commands/redis_command_store.h"
#include "taskledger/mcp_proxy/http_listener.h"
#include "taskledger/mcp_proxy/metrics.h"
#include "taskledger/mcp_proxy/proxy.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/session/session.h"
#include "verbs.h"

namespace taskledger::cli {
namespace {

struct McpProxyOptions {
  CommonOptions common;
  std::string rules;
  std::string conversation;
  std::vector<std::string> server;
  std::string upstream;
  std::string upstream_token;
  std::string listen;
  std::string require_token;
  std::vector<std::string> allow_origins;
  size_t max_sessions = 64;
  int64_t call_timeout_ms = 300'000;
  int64_t elicitation_timeout_ms = 600'000;
  int64_t idle_timeout_ms = 30 * 60'000;
  std::string log_calls;   // a file for the JSON lines of gated calls, "-" for stderr
  std::string metrics;     // HOST:PORT for GET /metrics
  std::string audit_html;  // the audit page of this run's conversations, written at the end
  size_t max_message_bytes = 16u << 20;
  std::string state_format = "markdown";
};

mcp::GatingProxy* g_running_proxy = nullptr;

extern "C" void StopRunningProxy(int) {
  if (g_running_proxy != nullptr) g_running_proxy->RequestStop();
}

std::string DefaultConversation() {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count();
  return "mcp-" + std::to_string(ms) + "-" + std::to_string(::getpid());
}

Result<std::unique_ptr<CommandStore>> OpenCommandStore(const std::string& url) {
  if (url.empty() || url == "memory") return NewMemoryCommandStore();
  RedisOptions redis;
  redis.url = url;
  return OpenRedisCommandStore(redis);
}

// Where the JSON lines of gated calls go; shared by the sessions of a
// listener, so one line is written whole at a time.
struct CallLogSink {
  std::mutex mu;
  std::ofstream file;
  bool to_stderr = false;
  void Write(const nlohmann::json& record) {
    const std::string line =
        record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::lock_guard<std::mutex> lock(mu);
    if (to_stderr) {
      std::cerr << line << std::flush;
    } else {
      file << line << std::flush;
    }
  }
};

// What every proxy of this run shares: the pack's folder, the stores, the
// call log and the metrics.
struct Shared {
  std::unique_ptr<Store> store;
  std::unique_ptr<CommandStore> command_store;
  StateBlockFormat format = StateBlockFormat::kMarkdown;
  std::unique_ptr<CallLogSink> call_log;
  mcp::ProxyMetrics metrics;
  std::unique_ptr<mcp::MetricsEndpoint> metrics_endpoint;
  std::mutex conversations_mu;
  std::vector<ConversationId> conversations;  // opened by this run, in order
};

// --audit-html: the page of every conversation this run opened (on the
// memory store the only record once the process exits). kExitUsage if it
// cannot be written.
int WriteRunAudit(const McpProxyOptions& o, Shared& shared, int exit_code) {
  if (o.audit_html.empty()) return exit_code;
  std::vector<ConversationId> conversations;
  {
    std::lock_guard<std::mutex> lock(shared.conversations_mu);
    conversations = shared.conversations;
  }
  Status written = WriteAuditHtml(*shared.store, conversations, o.audit_html);
  if (!written.ok()) return ReportError("cannot write " + o.audit_html, written);
  std::cerr << "taskledger mcp-proxy: audit page of " << conversations.size()
            << " conversation(s) written to " << o.audit_html << std::endl;
  return exit_code;
}

mcp::ProxyOptions BaseProxyOptions(const McpProxyOptions& o, Shared& shared) {
  mcp::ProxyOptions options;
  options.server_command = o.server;
  options.upstream_url = o.upstream;
  if (!o.upstream_token.empty()) {
    options.upstream_headers.emplace_back("Authorization", "Bearer " + o.upstream_token);
  }
  options.call_timeout_ms = o.call_timeout_ms;
  options.elicitation_timeout_ms = o.elicitation_timeout_ms;
  options.max_message_bytes = o.max_message_bytes;
  options.state_block.format = shared.format;
  if (shared.call_log) {
    CallLogSink* sink = shared.call_log.get();
    options.call_log = [sink](const nlohmann::json& record) { sink->Write(record); };
  }
  options.metrics = &shared.metrics;
  return options;
}

// The session writes every proxied write through the command ledger, under
// the run {tenant, conversation}, leases held by this process (`suffix`
// tells the MCP sessions of one listener apart).
SessionOptions ProxySessionOptions(Shared& shared, const ConversationId& id,
                                   const std::string& suffix) {
  SessionOptions options;
  options.commands =
      mcp::McpCommandOptions(*shared.command_store, RunId{id.tenant, id.conversation},
                             "mcp-proxy-" + std::to_string(::getpid()) + suffix);
  return options;
}

int RunStdio(const McpProxyOptions& o, Shared& shared) {
  auto pack = RulePack::Load(o.rules);
  if (!pack) return ReportError("cannot load rule pack " + o.rules, pack.error());
  ConversationId id{o.common.tenant,
                    o.conversation.empty() ? DefaultConversation() : o.conversation};
  auto session = Session::Open(*shared.store, id, std::move(pack).value(),
                               ProxySessionOptions(shared, id, ""));
  if (!session) return ReportError("cannot open conversation " + id.conversation, session.error());
  shared.conversations.push_back(id);
  mcp::GatingProxy proxy(**session, BaseProxyOptions(o, shared));

  std::cerr << "taskledger mcp-proxy: conversation " << id.conversation << " (tenant " << id.tenant
            << "), store " << o.common.store << std::endl;
  g_running_proxy = &proxy;
  struct sigaction sa {};
  sa.sa_handler = StopRunningProxy;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  auto report = proxy.Run(STDIN_FILENO, STDOUT_FILENO);
  g_running_proxy = nullptr;
  if (!report) return ReportError("mcp-proxy", report.error());
  std::cerr << "taskledger mcp-proxy: " << report->detail << "; " << report->calls_forwarded
            << " calls forwarded, " << report->calls_blocked << " blocked, "
            << report->calls_uncertain << " uncertain, " << report->malformed
            << " malformed messages, " << report->elicitations << " confirmations asked ("
            << report->elicitations_accepted << " yes)" << std::endl;
  return WriteRunAudit(
      o, shared, report->end == mcp::ProxyReport::End::kClientClosed ? kExitOk : kExitCheckFailed);
}

int RunListener(const McpProxyOptions& o, Shared& shared) {
  mcp::ListenerOptions listen;
  if (!ParseHostPort(o.listen, listen.host, listen.port)) {
    return ReportError("mcp-proxy",
                       Status::InvalidArgument("--listen must be HOST:PORT, not " + o.listen));
  }
  listen.require_token = o.require_token;
  listen.allowed_origins = o.allow_origins;
  listen.max_sessions = o.max_sessions;
  listen.max_body_bytes = o.max_message_bytes;
  listen.idle_timeout_ms = o.idle_timeout_ms;
  // The pack is checked once up front; each session loads its own copy.
  if (auto pack = RulePack::Load(o.rules); !pack) {
    return ReportError("cannot load rule pack " + o.rules, pack.error());
  }
  const std::string prefix = o.conversation.empty() ? "mcp" : o.conversation;
  auto factory = [&o, &shared, prefix](
                     const std::string& session_id,
                     const std::string& authorization) -> Result<mcp::GatedSession> {
    auto pack = RulePack::Load(o.rules);
    if (!pack) return pack.error();
    ConversationId id{o.common.tenant, prefix + "-" + session_id};
    auto session = Session::Open(*shared.store, id, std::move(pack).value(),
                                 ProxySessionOptions(shared, id, "-" + session_id.substr(0, 8)));
    if (!session) return session.error();
    {
      std::lock_guard<std::mutex> lock(shared.conversations_mu);
      shared.conversations.push_back(id);
    }
    mcp::GatedSession parts;
    parts.session = std::move(session).value();
    parts.options = BaseProxyOptions(o, shared);
    // Without a token of the proxy's own, the client's credentials are the
    // upstream's to check.
    if (!o.upstream.empty() && o.upstream_token.empty() && o.require_token.empty() &&
        !authorization.empty()) {
      parts.options.upstream_headers.emplace_back("Authorization", authorization);
    }
    std::cerr << "taskledger mcp-proxy: MCP session " << session_id << " is conversation "
              << id.conversation << " (tenant " << id.tenant << ")" << std::endl;
    return parts;
  };

  // Signals are taken by sigwait on this thread; every thread started from
  // here on inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, sig);
  ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  mcp::HttpListener listener(listen, factory);
  auto port = listener.Bind();
  if (!port) return ReportError("mcp-proxy", port.error());
  std::string host =
      listen.host.find(':') != std::string::npos ? "[" + listen.host + "]" : listen.host;
  // One write (std::cerr is unbuffered): a reader waiting for this line
  // gets it whole.
  std::cerr << ("taskledger mcp-proxy: listening on http://" + host + ":" + std::to_string(*port) +
                "/mcp, store " + o.common.store + "\n")
            << std::flush;
  Result<mcp::ListenerReport> report = Status::Internal("not served");
  std::thread serving([&listener, &report] {
    report = listener.Serve();
    ::kill(::getpid(), SIGTERM);  // wakes the sigwait below if Serve ended on its own
  });
  int sig = 0;
  ::sigwait(&signals, &sig);
  listener.Stop();
  serving.join();
  if (!report) return ReportError("mcp-proxy", report.error());
  std::cerr << "taskledger mcp-proxy: stopped; " << report->sessions_opened << " sessions ("
            << report->sessions_expired << " expired when idle), " << report->calls_forwarded
            << " calls forwarded, " << report->calls_blocked << " blocked, "
            << report->calls_uncertain << " uncertain, " << report->refused << " requests refused"
            << std::endl;
  return WriteRunAudit(o, shared, kExitOk);
}

int RunMcpProxy(const McpProxyOptions& o) {
  Shared shared;
  if (o.state_format == "plain")
    shared.format = StateBlockFormat::kPlain;
  else if (o.state_format == "xml")
    shared.format = StateBlockFormat::kXml;
  else if (o.state_format == "json")
    shared.format = StateBlockFormat::kJson;
  else if (o.state_format != "markdown") {
    return ReportError("mcp-proxy", Status::InvalidArgument(
                                        "--state-format must be plain, markdown, xml or json"));
  }
  if (o.server.empty() == o.upstream.empty()) {
    return ReportError(
        "mcp-proxy", Status::InvalidArgument("give the MCP server either as a command after -- or "
                                             "as --upstream URL (one of the two)"));
  }
  if (!o.require_token.empty() && o.listen.empty()) {
    return ReportError("mcp-proxy", Status::InvalidArgument("--require-token needs --listen"));
  }
  shared.store = OpenStoreOrReport(o.common);
  if (!shared.store) return kExitUsage;
  auto command_store = OpenCommandStore(o.common.store);
  if (!command_store)
    return ReportError("cannot open the command store " + o.common.store, command_store.error());
  shared.command_store = std::move(command_store).value();
  if (!o.log_calls.empty()) {
    shared.call_log = std::make_unique<CallLogSink>();
    if (o.log_calls == "-") {
      shared.call_log->to_stderr = true;
    } else {
      shared.call_log->file.open(o.log_calls, std::ios::app);
      if (!shared.call_log->file) {
        return ReportError("mcp-proxy", Status::InvalidArgument("cannot open --log-calls file " +
                                                                o.log_calls + " for appending"));
      }
    }
  }
  if (!o.metrics.empty()) {
    std::string host;
    int port = 0;
    if (!ParseHostPort(o.metrics, host, port)) {
      return ReportError("mcp-proxy",
                         Status::InvalidArgument("--metrics must be HOST:PORT, not " + o.metrics));
    }
    auto endpoint = mcp::MetricsEndpoint::Start(host, port, shared.metrics);
    if (!endpoint) return ReportError("cannot serve --metrics on " + o.metrics, endpoint.error());
    shared.metrics_endpoint = std::move(endpoint).value();
    const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    std::cerr << "taskledger mcp-proxy: metrics on http://" << shown << ":"
              << shared.metrics_endpoint->port() << "/metrics" << std::endl;
  }
  return o.listen.empty() ? RunStdio(o, shared) : RunListener(o, shared);
}

}  // namespace

void AddMcpProxyVerb(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<McpProxyOptions>();
  CLI::App* verb = app.add_subcommand(
      "mcp-proxy",
      "Run an MCP server behind the ledger and the policy gate (stdio or Streamable HTTP)");
  AddCommonOptions(*verb, options->common);
  verb->add_option("--rules", options->rules, "Rule pack folder (rules/<pack>)")->required();
  verb->add_option("--conversation", options->conversation,
                   "Conversation id in the store (default: mcp-<time>-<pid>); with --listen, "
                   "the prefix of each session's (default: mcp)");
  verb->add_option("--call-timeout-ms", options->call_timeout_ms,
                   "Longest wait for the server's answer to a tools/call (0: none)")
      ->capture_default_str();
  verb->add_option("--elicitation-timeout-ms", options->elicitation_timeout_ms,
                   "Longest wait for the user's answer when a rule's confirm is asked through "
                   "MCP elicitation; no answer denies the call (0: none)")
      ->capture_default_str();
  verb->add_option("--max-message-bytes", options->max_message_bytes,
                   "Longest JSON-RPC message accepted from either side")
      ->capture_default_str();
  verb->add_option("--state-format", options->state_format,
                   "Form of the taskledger://state resource: plain, markdown, xml, json")
      ->capture_default_str();
  verb->add_option("--listen", options->listen,
                   "Serve MCP over Streamable HTTP on HOST:PORT (endpoint /mcp) instead of "
                   "stdio; PORT 0 picks a free one");
  verb->add_option("--require-token", options->require_token,
                   "With --listen: require 'Authorization: Bearer TOKEN' on every request")
      ->envname("TASKLEDGER_MCP_TOKEN");
  verb->add_option("--allow-origin", options->allow_origins,
                   "With --listen: an Origin allowed besides loopback ones (repeatable)");
  verb->add_option("--max-sessions", options->max_sessions,
                   "With --listen: most MCP sessions open at once")
      ->capture_default_str();
  verb->add_option("--idle-timeout-ms", options->idle_timeout_ms,
                   "With --listen: end an MCP session after this long without a request "
                   "(its id then answers 404; 0: never)")
      ->capture_default_str();
  verb->add_option("--log-calls", options->log_calls,
                   "Append one JSON line per gated tools/call (conversation, tool, decision, "
                   "rule, command state, latency) to this file; - for stderr");
  verb->add_option("--metrics", options->metrics,
                   "Serve Prometheus metrics of the gated calls at http://HOST:PORT/metrics "
                   "(PORT 0 picks a free one)");
  verb->add_option("--audit-html", options->audit_html,
                   "At the end, write the audit page of the conversations this run opened "
                   "(with the memory store, the only record of its decisions)");
  verb->add_option("--upstream", options->upstream,
                   "The MCP server's Streamable HTTP URL (http:// or https://), instead of a "
                   "command");
  verb->add_option("--upstream-token", options->upstream_token,
                   "Sent to --upstream as 'Authorization: Bearer TOKEN'")
      ->envname("TASKLEDGER_UPSTREAM_TOKEN");
  verb->add_option("server", options->server, "The MCP server command, after --");
  verb->callback([options, &exit_code] { exit_code = RunMcpProxy(*options); });
}

}  // namespace taskledger::cli
