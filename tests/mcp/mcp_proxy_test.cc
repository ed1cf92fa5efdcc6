// GatingProxy against a fake MCP server (fake_mcp_server.cc) over real pipes:
// what passes untouched, what is gated, what reaches the command ledger and
// the conversation ledger, and how crashes, hangs, cancellations, malformed
// and oversize messages and a vanishing client end.
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fake_pack.h"
#include "taskledger/commands/memory_command_store.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/mcp_proxy/proxy.h"
#include "test_pipe.h"

namespace taskledger {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// One proxy run on its own thread, with the test as its client.
class ProxyRun {
 public:
  // The session writes through the command ledger (McpCommandOptions, as
  // the verb opens it) on a memory command store, run {t, c1}.
  explicit ProxyRun(const std::vector<std::string>& server_args = {},
                    mcp::ProxyOptions options = {})
      : dir_(fs::temp_directory_path() /
             ("tl-mcp-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++))) {
    fs::create_directories(dir_);
    ::setenv("FAKE_MCP_LOG", server_log().c_str(), 1);
    store_ = NewMemoryStore();
    commands_store_ = NewMemoryCommandStore();
    SessionOptions session_options;
    session_options.commands =
        mcp::McpCommandOptions(*commands_store_, RunId{"t", "c1"}, "test-proxy");
    auto session =
        Session::Open(*store_, ConversationId{"t", "c1"}, testing::FakePack(), session_options);
    REQUIRE(session.has_value());
    session_ = std::move(session).value();
    options.server_command = {FAKE_MCP_SERVER};
    for (auto& a : server_args) options.server_command.push_back(a);
    if (!options.log) options.log = [](std::string_view) {};
    proxy_ = std::make_unique<mcp::GatingProxy>(*session_, options);
    int to_proxy[2], from_proxy[2];
    REQUIRE(testing::ClosedOnExecPipe(to_proxy));
    REQUIRE(testing::ClosedOnExecPipe(from_proxy));
    client_write_ = to_proxy[1];
    client_read_ = from_proxy[0];
    proxy_in_ = to_proxy[0];
    proxy_out_ = from_proxy[1];
    thread_ = std::thread([this] { result_ = proxy_->Run(proxy_in_, proxy_out_); });
  }

  ~ProxyRun() {
    CloseClient();
    Join();
    for (int fd : {client_read_, proxy_in_, proxy_out_}) ::close(fd);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  fs::path dir() const { return dir_; }
  std::string server_log() const { return (dir_ / "server.log").string(); }
  std::string ServerSaw() const {
    std::ifstream in(server_log());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  void SendLine(const std::string& line) {
    std::string data = line + "\n";
    REQUIRE(::write(client_write_, data.data(), data.size()) == static_cast<ssize_t>(data.size()));
  }
  void Send(const json& j) { SendLine(j.dump()); }
  void Request(int id, const std::string& method, json params = json::object()) {
    Send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
  }

  // The next message from the proxy, or null after timeout_ms.
  json Receive(int timeout_ms = 5000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      auto nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        last_line_ = line;
        return json::parse(line);
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) return nullptr;
      pollfd p{client_read_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char buf[65536];
      ssize_t n = ::read(client_read_, buf, sizeof buf);
      if (n <= 0) return nullptr;
      buffer_.append(buf, static_cast<size_t>(n));
    }
  }
  const std::string& last_line() const { return last_line_; }

  void Initialize() {
    Request(0, "initialize",
            {{"protocolVersion", "2025-06-18"},
             {"capabilities", json::object()},
             {"clientInfo", {{"name", "test", "version", "1"}}}});
    json r = Receive();
    REQUIRE(r["id"] == 0);
    Send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  }

  json Call(int id, const std::string& tool, json args) {
    Request(id, "tools/call", {{"name", tool}, {"arguments", args}});
    return Receive();
  }

  void CloseClient() {
    if (client_write_ >= 0) ::close(client_write_);
    client_write_ = -1;
  }
  const Result<mcp::ProxyReport>& Join() {
    if (thread_.joinable()) thread_.join();
    return result_;
  }

  Store& store() { return *store_; }
  CommandStore& commands() { return *commands_store_; }
  mcp::GatingProxy& proxy() { return *proxy_; }

 private:
  static inline int counter_ = 0;
  fs::path dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<CommandStore> commands_store_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<mcp::GatingProxy> proxy_;
  int client_write_ = -1, client_read_ = -1, proxy_in_ = -1, proxy_out_ = -1;
  std::thread thread_;
  Result<mcp::ProxyReport> result_ = Status::Internal("not run");
  std::string buffer_, last_line_;
};

std::string TextOf(const json& response) {
  return response["result"]["content"][0]["text"].get<std::string>();
}

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
  CHECK((*commands)[0].tool == "touch");
  CHECK((*commands)[0].target == target);
  CHECK((*commands)[0].state == CommandState::kSucceeded);
  CHECK((*commands)[0].attempts == 1);
  // Each command carries the decision it was allowed by, naming the rule.
  CHECK((*commands)[0].decision["decision"] == "allow");
  CHECK((*commands)[0].decision["rule"] == "fake.no_forbidden");
  CHECK((*commands)[0].decision["call_id"] == "1");
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
  CHECK(touch.decision["rule"] == "fake.no_forbidden");
  CHECK(touch.decision["call_id"] == "1");
  // The server saw the key the session's command holds.
  CHECK(run.ServerSaw().find(touch.idempotency_key) != std::string::npos);
  CHECK((*commands)[1].state == CommandState::kUncertain);
  // The conversation ledger says uncertain too, not error.
  auto head = run.store().ReadHead(ConversationId{"t", "c1"});
  REQUIRE(head.has_value());
  REQUIRE(head->calls.size() == 2);
  CHECK(head->calls[1].outcome == "uncertain");
}

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
