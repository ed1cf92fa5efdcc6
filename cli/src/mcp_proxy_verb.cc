// `taskledger mcp-proxy --rules DIR [--store URL] [--conversation ID] -- CMD ...`
// runs an MCP server (CMD) behind the gating proxy (mcp_proxy/proxy.h) on
// this process's stdin/stdout, so any MCP client gets the ledger, the policy
// gate and the command ledger by launching this instead of the server.
// stdout belongs to the protocol: everything else goes to stderr.
// Exit: 0 the client closed the connection, 1 the server exited first,
// 2 bad usage, a broken pack, an unreachable store or a server that cannot
// start. SIGINT, SIGTERM and SIGHUP end the run as if the client had closed.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli_common.h"
#include "taskledger/commands/command_ledger.h"
#include "taskledger/commands/memory_command_store.h"
#include "taskledger/commands/redis_command_store.h"
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
  int64_t call_timeout_ms = 300'000;
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

int RunMcpProxy(const McpProxyOptions& o) {
  StateBlockFormat format = StateBlockFormat::kMarkdown;
  if (o.state_format == "plain")
    format = StateBlockFormat::kPlain;
  else if (o.state_format == "xml")
    format = StateBlockFormat::kXml;
  else if (o.state_format == "json")
    format = StateBlockFormat::kJson;
  else if (o.state_format != "markdown") {
    return ReportError("mcp-proxy", Status::InvalidArgument(
                                        "--state-format must be plain, markdown, xml or json"));
  }
  auto pack = RulePack::Load(o.rules);
  if (!pack) return ReportError("cannot load rule pack " + o.rules, pack.error());
  std::unique_ptr<Store> store = OpenStoreOrReport(o.common);
  if (!store) return kExitUsage;
  auto command_store = OpenCommandStore(o.common.store);
  if (!command_store)
    return ReportError("cannot open the command store " + o.common.store, command_store.error());

  ConversationId id{o.common.tenant,
                    o.conversation.empty() ? DefaultConversation() : o.conversation};
  auto session = Session::Open(*store, id, std::move(pack).value());
  if (!session) return ReportError("cannot open conversation " + id.conversation, session.error());
  CommandLedgerOptions ledger_options;
  ledger_options.worker_id = "mcp-proxy-" + std::to_string(::getpid());
  CommandLedger commands(**command_store, SystemClock(), ledger_options);

  mcp::ProxyOptions options;
  options.server_command = o.server;
  options.run = RunId{id.tenant, id.conversation};
  options.call_timeout_ms = o.call_timeout_ms;
  options.max_message_bytes = o.max_message_bytes;
  options.state_block.format = format;
  mcp::GatingProxy proxy(**session, commands, options);

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
            << " malformed messages" << std::endl;
  return report->end == mcp::ProxyReport::End::kClientClosed ? kExitOk : kExitCheckFailed;
}

}  // namespace

void AddMcpProxyVerb(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<McpProxyOptions>();
  CLI::App* verb = app.add_subcommand(
      "mcp-proxy", "Run an MCP server behind the ledger and the policy gate (stdio)");
  AddCommonOptions(*verb, options->common);
  verb->add_option("--rules", options->rules, "Rule pack folder (rules/<pack>)")->required();
  verb->add_option("--conversation", options->conversation,
                   "Conversation id in the store (default: mcp-<time>-<pid>)");
  verb->add_option("--call-timeout-ms", options->call_timeout_ms,
                   "Longest wait for the server's answer to a tools/call (0: none)")
      ->capture_default_str();
  verb->add_option("--max-message-bytes", options->max_message_bytes,
                   "Longest JSON-RPC message accepted from either side")
      ->capture_default_str();
  verb->add_option("--state-format", options->state_format,
                   "Form of the taskledger://state resource: plain, markdown, xml, json")
      ->capture_default_str();
  verb->add_option("server", options->server, "The MCP server command, after --")->required();
  verb->callback([options, &exit_code] { exit_code = RunMcpProxy(*options); });
}

}  // namespace taskledger::cli
