// GatingProxy against a fake MCP server (fake_mcp_server.cc) over real pipes:
// what passes untouched, what is gated, and what reaches the command ledger
// and the conversation ledger (failures: mcp_proxy_fault_test.cc).
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

TEST_CASE("initialize gains the state resource and prompt, other messages pass untouched",
          "[mcp]") {
  ProxyRun run;
  run.Request(0, "initialize",
              {{"protocolVersion", "2025-06-18"},
               {"capabilities", json::object()},
               {"clientInfo", {{"name", "test", "version", "1"}}}});
  json init = run.Receive();
  CHECK(init["result"]["serverInfo"]["name"] == "fake");
  CHECK(init["result"]["capabilities"].contains("tools"));
  CHECK(init["result"]["capabilities"].contains("resources"));
  CHECK(init["result"]["capabilities"].contains("prompts"));

  const std::string list = R"({"jsonrpc":"2.0","id":"list-1","method":"tools/list","params":{}})";
  run.SendLine(list);
  json tools = run.Receive();
  CHECK(tools["id"] == "list-1");
  CHECK(tools["result"]["tools"].size() == 7);
  run.Request(2, "ping");
  CHECK(run.Receive()["result"] == json::object());
  run.Request(3, "resources/list");
  json resources = run.Receive();
  REQUIRE(resources["result"]["resources"].size() == 1);
  CHECK(resources["result"]["resources"][0]["uri"] == "taskledger://state");
  run.Request(4, "no/such/method");
  CHECK(run.Receive()["error"]["code"] == -32601);         // the server's own answer
  CHECK(run.ServerSaw().find(list) != std::string::npos);  // byte for byte
}

TEST_CASE("a read-only call passes and its output reaches the ledger and the state resource",
          "[mcp]") {
  ProxyRun run;
  run.Initialize();
  json r = run.Call(1, "echo", {{"value", "blue-42"}});
  CHECK(r["result"]["structuredContent"]["echo"]["value"] == "blue-42");
  CHECK(r["result"]["isError"] == false);
  run.Request(2, "resources/read", {{"uri", "taskledger://state"}});
  json state = run.Receive();
  CHECK(state["result"]["contents"][0]["text"].get<std::string>().find("blue-42") !=
        std::string::npos);
  run.Request(3, "prompts/get", {{"name", "taskledger_state"}});
  json prompt = run.Receive();
  CHECK(prompt["result"]["messages"][0]["content"]["text"].get<std::string>().find("echoed") !=
        std::string::npos);
  run.CloseClient();
  REQUIRE(run.Join().has_value());
  auto head = run.store().ReadHead(ConversationId{"t", "c1"});
  REQUIRE(head.has_value());
  CHECK(head->version == 1);  // one turn per call
  REQUIRE(head->calls.size() == 1);
  CHECK(head->calls[0].outcome == "ok");
  auto commands = run.commands().ListCommands(RunId{"t", "c1"});
  REQUIRE(commands.has_value());
  CHECK(commands->empty());  // read-only calls are not commands
}

TEST_CASE("a denied call never reaches the server and the client sees why", "[mcp]") {
  ProxyRun run;
  run.Initialize();
  std::string target = (run.dir() / "forbidden.txt").string();
  json r = run.Call(7, "touch", {{"path", target}});
  CHECK(r["id"] == 7);
  CHECK(r["result"]["isError"] == true);
  CHECK(TextOf(r).find("fake.no_forbidden") != std::string::npos);
  CHECK(TextOf(r).find("off limits") != std::string::npos);
  CHECK_FALSE(fs::exists(target));
  CHECK(run.ServerSaw().find("forbidden") == std::string::npos);
  run.CloseClient();
  REQUIRE(run.Join().has_value());
  CHECK(run.Join()->calls_blocked == 1);
  CHECK(run.Join()->calls_forwarded == 0);
  auto head = run.store().ReadHead(ConversationId{"t", "c1"});
  REQUIRE(head.has_value());
  REQUIRE(head->calls.size() == 1);
  CHECK(head->calls[0].outcome == "denied");
}

TEST_CASE("an allowed write is reserved and leased before it runs and succeeds with evidence",
          "[mcp]") {
  ProxyRun run;
  run.Initialize();
  std::string target = (run.dir() / "made.txt").string();
  json r = run.Call(1, "touch", {{"path", target}});
  CHECK(r["result"]["isError"] == false);
  CHECK(fs::exists(target));
  CHECK(run.ServerSaw().find("taskledger/idempotencyKey") != std::string::npos);
  json refused = run.Call(2, "refuse", json::object());
  CHECK(refused["result"]["isError"] == true);
  run.CloseClient();
  REQUIRE(run.Join().has_value());
  auto commands = run.commands().ListCommands(RunId{"t", "c1"});
  REQUIRE(commands.has_value());
  REQUIRE(commands->size() == 2);
  CHECK((*commands)[0].call.tool == "touch");
  CHECK((*commands)[0].target == target);
  CHECK((*commands)[0].state == CommandState::kSucceeded);
  CHECK((*commands)[0].attempts == 1);
  // Each command carries the decision it was allowed by, naming the rule.
  CHECK((*commands)[0].decision.Verdict() == "allow");
  CHECK((*commands)[0].decision.Rule() == "fake.no_forbidden");
  CHECK((*commands)[0].decision.CallId() == "1");
  CHECK((*commands)[1].state == CommandState::kFailed);
}

TEST_CASE("through the session's command ledger: key, deciding rule, and uncertain as uncertain",
          "[mcp]") {
  mcp::ProxyOptions options;
  options.call_timeout_ms = 200;
  ProxyRun run({}, options);
  run.Initialize();
  std::string target = (run.dir() / "made.txt").string();
  json r = run.Call(1, "touch", {{"path", target}});
  CHECK(r["result"]["isError"] == false);
  CHECK(fs::exists(target));
  json hung = run.Call(2, "hang", json::object());
  CHECK(hung["error"]["code"] == -32603);
  CHECK_THAT(hung["error"]["message"].get<std::string>(),
             Catch::Contains("200 ms") && Catch::Contains("unknown"));
  run.CloseClient();
  REQUIRE(run.Join().has_value());
  auto commands = run.commands().ListCommands(RunId{"t", "c1"});
  REQUIRE(commands.has_value());
  REQUIRE(commands->size() == 2);
  const Command& touch = (*commands)[0];
  CHECK(touch.state == CommandState::kSucceeded);
  CHECK(touch.target == target);
  CHECK(touch.decision.Rule() == "fake.no_forbidden");
  CHECK(touch.decision.CallId() == "1");
  // The server saw the key the session's command holds.
  CHECK(run.ServerSaw().find(touch.idempotency_key) != std::string::npos);
  CHECK((*commands)[1].state == CommandState::kUncertain);
  // The conversation ledger says uncertain too, not error.
  auto head = run.store().ReadHead(ConversationId{"t", "c1"});
  REQUIRE(head.has_value());
  REQUIRE(head->calls.size() == 2);
  CHECK(head->calls[1].outcome == "uncertain");
}

TEST_CASE("the same request sent again returns its recorded outcome, a new one runs again",
          "[mcp]") {
  ProxyRun run;
  run.Initialize();
  std::string target = (run.dir() / "once.txt").string();
  json first = run.Call(1, "touch", {{"path", target}});
  CHECK(first["result"]["isError"] == false);
  json again = run.Call(1, "touch", {{"path", target}});  // the client retries request 1
  CHECK(again["id"] == 1);
  CHECK(again["result"]["isError"] == false);
  CHECK_THAT(TextOf(again), Catch::Contains("already succeeded"));
  json fresh = run.Call(2, "touch", {{"path", target}});  // a new request, same arguments
  CHECK(fresh["result"]["isError"] == false);
  run.CloseClient();
  REQUIRE(run.Join().has_value());
  CHECK(run.Join()->calls_forwarded == 2);
  const std::string saw = run.ServerSaw();
  size_t touches = 0;
  for (size_t at = saw.find("\"tools/call\""); at != std::string::npos;
       at = saw.find("\"tools/call\"", at + 1))
    ++touches;
  CHECK(touches == 2);  // requests 1 and 2, not the retry of 1
  auto commands = run.commands().ListCommands(RunId{"t", "c1"});
  REQUIRE(commands.has_value());
  REQUIRE(commands->size() == 2);
  CHECK((*commands)[0].idempotency_key != (*commands)[1].idempotency_key);
}

TEST_CASE("the state resource merges with the server's own resources", "[mcp]") {
  ProxyRun run({"--resources"});
  run.Initialize();
  run.Request(1, "resources/list");
  json r = run.Receive();
  REQUIRE(r["result"]["resources"].size() == 2);
  CHECK(r["result"]["resources"][0]["uri"] == "taskledger://state");
  CHECK(r["result"]["resources"][1]["uri"] == "file:///fake");
}

}  // namespace
}  // namespace taskledger
