// GatingProxy's failures against a fake MCP server (fake_mcp_server.cc) over
// real pipes: malformed and oversize messages from either side, a server that
// crashes, hangs, exits at once or cannot start, a cancelled call, a
// vanishing client, and a session without a command ledger.
#include <sys/wait.h>

#include <chrono>
#include <string>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "proxy_run.h"

namespace taskledger {
namespace {

using nlohmann::json;
using testing::ProxyRun;
using testing::TextOf;
namespace fs = std::filesystem;

TEST_CASE("malformed, batched and oversize client messages get JSON-RPC errors", "[mcp]") {
  mcp::ProxyOptions options;
  options.max_message_bytes = 1024;
  ProxyRun run({}, options);
  run.SendLine("{not json");
  CHECK(run.Receive()["error"]["code"] == -32700);
  run.SendLine(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
  CHECK(run.Receive()["error"]["code"] == -32600);
  run.SendLine(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":")" +
               std::string(5000, 'p') + "\"}}");
  json big = run.Receive();
  CHECK(big["error"]["code"] == -32600);
  CHECK(big["error"]["message"].get<std::string>().find("1024") != std::string::npos);
  run.Request(9, "tools/call", {{"arguments", json::object()}});  // no tool name
  json nameless = run.Receive();
  CHECK(((nameless.contains("error") && nameless["error"]["code"] == -32602) ||
         nameless["result"]["isError"] == true));
  run.Request(10, "ping");  // still healthy
  CHECK(run.Receive()["id"] == 10);
  run.CloseClient();
  REQUIRE(run.Join().has_value());
  CHECK(run.Join()->malformed == 3);
}

TEST_CASE("a server crash during a write fails the call, marks it uncertain, and ends the run",
          "[mcp]") {
  ProxyRun run;
  run.Initialize();
  json r = run.Call(5, "crash", json::object());
  CHECK(r["id"] == 5);
  CHECK(r["error"]["code"] == -32603);
  CHECK(r["error"]["message"].get<std::string>().find("exited with status 3") != std::string::npos);
  const auto& report = run.Join();
  REQUIRE(report.has_value());
  CHECK(report->end == mcp::ProxyReport::End::kServerExited);
  REQUIRE(WIFEXITED(report->server_wait_status));
  CHECK(WEXITSTATUS(report->server_wait_status) == 3);
  auto commands = run.commands().ListCommands(RunId{"t", "c1"});
  REQUIRE(commands.has_value());
  REQUIRE(commands->size() == 1);
  CHECK((*commands)[0].state == CommandState::kUncertain);
}

TEST_CASE("a call the server never answers times out as uncertain, the proxy goes on", "[mcp]") {
  mcp::ProxyOptions options;
  options.call_timeout_ms = 200;
  ProxyRun run({}, options);
  run.Initialize();
  json r = run.Call(1, "hang", json::object());
  CHECK(r["error"]["code"] == -32603);
  CHECK(r["error"]["message"].get<std::string>().find("200 ms") != std::string::npos);
  json next = run.Call(2, "echo", {{"value", "after"}});
  CHECK(next["result"]["isError"] == false);
  CHECK(run.ServerSaw().find("notifications/cancelled") != std::string::npos);
  run.CloseClient();
  REQUIRE(run.Join().has_value());
  CHECK(run.Join()->calls_uncertain == 1);
  auto commands = run.commands().ListCommands(RunId{"t", "c1"});
  REQUIRE(commands.has_value());
  CHECK((*commands)[0].state == CommandState::kUncertain);
}

TEST_CASE("a cancelled call is forwarded as a cancellation and gets no answer", "[mcp]") {
  ProxyRun run;
  run.Initialize();
  run.Request(1, "tools/call", {{"name", "hang"}, {"arguments", json::object()}});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  run.Send(
      {{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 1}}}});
  run.Request(2, "ping");
  json r = run.Receive();
  CHECK(r["id"] == 2);  // no answer to the cancelled call came first
  run.CloseClient();
  REQUIRE(run.Join().has_value());
  CHECK(run.Join()->calls_uncertain == 1);
}

TEST_CASE("garbage and oversize lines from the server are dropped, not relayed", "[mcp]") {
  mcp::ProxyOptions options;
  options.max_message_bytes = 1024;
  ProxyRun run({}, options);
  run.Initialize();
  json r = run.Call(1, "spam", json::object());
  CHECK(TextOf(r) == "spammed");
  run.CloseClient();
  REQUIRE(run.Join().has_value());
  CHECK(run.Join()->malformed == 2);
}

TEST_CASE("a client that disconnects ends the run promptly and the server is reaped", "[mcp]") {
  ProxyRun run;
  run.Initialize();
  auto start = std::chrono::steady_clock::now();
  run.CloseClient();
  const auto& report = run.Join();
  REQUIRE(report.has_value());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
  CHECK(report->end == mcp::ProxyReport::End::kClientClosed);
  REQUIRE(WIFEXITED(report->server_wait_status));  // it saw EOF and exited by itself
  CHECK(WEXITSTATUS(report->server_wait_status) == 0);
}

TEST_CASE("a server that exits at once fails the pending initialize", "[mcp]") {
  ProxyRun run({"--exit-at-start", "4"});
  run.Request(0, "initialize", json::object());
  json r = run.Receive(2000);
  if (!r.is_null()) {  // the request may race the exit; either way no hang
    CHECK(r["error"]["code"] == -32603);
  }
  const auto& report = run.Join();
  REQUIRE(report.has_value());
  CHECK(report->end == mcp::ProxyReport::End::kServerExited);
  CHECK(WEXITSTATUS(report->server_wait_status) == 4);
}

TEST_CASE("a server command that cannot start is an Unavailable error", "[mcp]") {
  auto store = NewMemoryStore();
  auto command_store = NewMemoryCommandStore();
  SessionOptions session_options;
  session_options.commands = mcp::McpCommandOptions(*command_store, RunId{"t", "c"}, "w");
  auto session =
      Session::Open(*store, ConversationId{"t", "c"}, testing::FakePack(), session_options);
  REQUIRE(session.has_value());
  mcp::ProxyOptions options;
  options.server_command = {"/nonexistent/mcp-server"};
  mcp::GatingProxy proxy(**session, options);
  auto r = proxy.Run(-1, -1);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().code() == StatusCode::kUnavailable);
  CHECK(r.error().message().find("/nonexistent/mcp-server") != std::string::npos);
}

TEST_CASE("a proxy refuses a session that does not write through a command ledger", "[mcp]") {
  auto store = NewMemoryStore();
  auto session = Session::Open(*store, ConversationId{"t", "c"}, testing::FakePack());
  REQUIRE(session.has_value());
  mcp::ProxyOptions options;
  options.server_command = {FAKE_MCP_SERVER};
  mcp::GatingProxy proxy(**session, options);
  auto r = proxy.Run(-1, -1);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(r.error().message(), Catch::Contains("command ledger"));
}

}  // namespace
}  // namespace taskledger
