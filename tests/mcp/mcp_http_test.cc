// HttpListener (mcp-proxy --listen) against the fake MCP server over real
// loopback HTTP: one conversation per MCP session, the bearer token, hostile
// requests answered with the right status and never forwarded, and answers as
// JSON or as an SSE stream.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fake_pack.h"
#include "taskledger/commands/memory_command_store.h"
#include "taskledger/http/client.h"
#include "taskledger/http/sse.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/mcp_proxy/http_listener.h"

namespace taskledger {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const char* kToken = "s3cret";

// A listener on a free loopback port, serving on its own thread, with the
// test as its HTTP client.
class Listening {
 public:
  explicit Listening(size_t max_body = 1 << 20, int64_t idle_timeout_ms = 0)
      : dir_(fs::temp_directory_path() / ("tl-mcp-http-" + std::to_string(::getpid()))) {
    fs::create_directories(dir_);
    ::setenv("FAKE_MCP_LOG", log_path().c_str(), 1);
    store_ = NewMemoryStore();
    commands_ = NewMemoryCommandStore();
    mcp::ListenerOptions options;
    options.require_token = kToken;
    options.max_body_bytes = max_body;
    options.log = [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_ += std::string(line) + "\n";
    };
    if (idle_timeout_ms > 0) options.idle_timeout_ms = idle_timeout_ms;
    listener_ = std::make_unique<mcp::HttpListener>(
        options, [this](const std::string& id, const std::string&) -> Result<mcp::GatedSession> {
          SessionOptions session_options;
          session_options.commands =
              mcp::McpCommandOptions(*commands_, RunId{"t", "h-" + id}, "test-" + id);
          auto session = Session::Open(*store_, ConversationId{"t", "h-" + id}, testing::FakePack(),
                                       session_options);
          if (!session) return session.error();
          mcp::GatedSession parts;
          parts.session = std::move(session).value();
          parts.options.server_command = {FAKE_MCP_SERVER};
          parts.options.log = [](std::string_view) {};
          return parts;
        });
    auto port = listener_->Bind();
    REQUIRE(port.has_value());
    port_ = *port;
    thread_ = std::thread([this] { (void)listener_->Serve(); });
    auto client = http::Client::Open("http://127.0.0.1:" + std::to_string(port_));
    REQUIRE(client.has_value());
    client_ = std::move(client).value();
  }
  ~Listening() {
    listener_->Stop();
    thread_.join();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  Store& store() { return *store_; }
  std::string ListenerLog() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return log_;
  }
  std::string log_path() const { return (dir_ / "server.log").string(); }
  std::string ServerLog() const {
    std::ifstream in(log_path());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  http::ClientResponse Post(const std::string& body, const http::Headers& extra = {},
                            bool with_token = true, const std::string& type = "application/json") {
    http::Headers h;
    if (!http::HasHeader(extra, "Accept")) h.emplace_back("Accept", "application/json");
    if (with_token) h.emplace_back("Authorization", std::string("Bearer ") + kToken);
    for (const auto& e : extra) h.push_back(e);
    auto r = client_->Send("POST", "/mcp", h, body, type);
    REQUIRE(r.has_value());
    return std::move(r).value();
  }
  http::ClientResponse Raw(const std::string& method, http::Headers extra) {
    extra.emplace_back("Authorization", std::string("Bearer ") + kToken);
    auto r = client_->Send(method, "/mcp", extra, "", "");
    REQUIRE(r.has_value());
    return std::move(r).value();
  }
  // Opens a session; returns its id.
  std::string Initialize() {
    auto r = Post(json{{"jsonrpc", "2.0"},
                       {"id", 1},
                       {"method", "initialize"},
                       {"params",
                        {{"protocolVersion", "2025-06-18"},
                         {"capabilities", json::object()},
                         {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}}
                      .dump());
    REQUIRE(r.status == 200);
    std::string id = r.Header("Mcp-Session-Id");
    REQUIRE(id.size() == 32);
    return id;
  }
  json Call(const std::string& session, int id, const std::string& method, json params) {
    auto r =
        Post(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump(),
             {{"Mcp-Session-Id", session}});
    REQUIRE(r.status == 200);
    return json::parse(r.body);
  }

 private:
  fs::path dir_;
  std::mutex log_mu_;
  std::string log_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<CommandStore> commands_;
  std::unique_ptr<mcp::HttpListener> listener_;
  int port_ = 0;
  std::thread thread_;
  std::unique_ptr<http::Client> client_;
};

std::string StateOf(Listening& l, const std::string& session) {
  json r = l.Call(session, 50, "resources/read", {{"uri", "taskledger://state"}});
  return r["result"]["contents"][0]["text"].get<std::string>();
}

// The fake servers running as this process's children (each session's proxy
// starts one), from POSIX `ps` (Linux, macOS) rather than Linux's /proc.
int FakeServersRunning() {
  FILE* ps = ::popen("ps -A -o ppid= -o stat= -o comm=", "r");
  REQUIRE(ps != nullptr);
  const std::string self = std::to_string(::getpid());
  const std::string name = "fake_mcp_server";  // macOS prints the path
  int n = 0;
  char line[4096];
  while (std::fgets(line, sizeof line, ps) != nullptr) {
    std::istringstream fields(line);
    std::string ppid, state, comm;
    if (!(fields >> ppid >> state >> comm)) continue;
    bool is_fake = comm.size() >= name.size() && comm.ends_with(name);
    n += ppid == self && is_fake && state[0] != 'Z';
  }
  REQUIRE(::pclose(ps) == 0);
  return n;
}

}  // namespace

TEST_CASE("mcp http: each MCP session is a conversation of its own", "[mcp][http]") {
  Listening l;
  std::string a = l.Initialize();
  std::string b = l.Initialize();
  CHECK(a != b);
  json echoed = l.Call(a, 2, "tools/call", {{"name", "echo"}, {"arguments", {{"value", "kiwi"}}}});
  CHECK(echoed["result"]["structuredContent"]["echo"]["value"] == "kiwi");
  CHECK(StateOf(l, a).find("kiwi") != std::string::npos);
  CHECK(StateOf(l, b).find("kiwi") == std::string::npos);
}

TEST_CASE("mcp http: without the bearer token nothing is served or forwarded", "[mcp][http]") {
  Listening l;
  std::string init = R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})";
  auto missing = l.Post(init, {}, false);
  CHECK(missing.status == 401);
  CHECK(missing.Header("WWW-Authenticate") == "Bearer");
  auto wrong = l.Post(init, {{"Authorization", "Bearer s3cres"}}, false);
  CHECK(wrong.status == 401);
  CHECK(l.ServerLog().empty());  // no server was even started
}

TEST_CASE("mcp http: hostile requests get the right status and reach no server", "[mcp][http]") {
  Listening l(4096);
  std::string s = l.Initialize();
  const std::string before = l.ServerLog();
  auto status = [&](const std::string& body, const http::Headers& h = {},
                    const std::string& type = "application/json") {
    return l.Post(body, h, true, type).status;
  };
  const http::Headers in_session = {{"Mcp-Session-Id", s}};
  const std::string list = R"({"jsonrpc":"2.0","id":9,"method":"tools/list"})";
  CHECK(status(std::string(8192, ' '), in_session) == 413);
  auto bad = l.Post("{nope", in_session);
  CHECK(bad.status == 400);
  CHECK(json::parse(bad.body)["error"]["code"] == -32700);
  CHECK(status("[" + list + "]", in_session) == 400);
  CHECK(status("42", in_session) == 400);
  CHECK(status(R"({"jsonrpc":"2.0","id":3,"method":7})", in_session) == 400);
  CHECK(status(list, in_session, "text/plain") == 415);
  CHECK(status(list) == 400);                                // no session id
  CHECK(status(list, {{"Mcp-Session-Id", "0123"}}) == 404);  // not a session
  CHECK(status(list, {{"Mcp-Session-Id", s}, {"MCP-Protocol-Version", "1999-01-01"}}) == 400);
  CHECK(status(list, {{"Mcp-Session-Id", s}, {"Origin", "https://evil.example"}}) == 403);
  CHECK(l.ServerLog() == before);  // none of it was forwarded
  // The session still works after all that.
  CHECK_FALSE(l.Call(s, 10, "tools/list", json::object())["result"]["tools"].empty());
}

TEST_CASE("mcp http: a blocked write answers on an SSE stream and never runs", "[mcp][http]") {
  Listening l;
  std::string s = l.Initialize();
  std::string body =
      json{{"jsonrpc", "2.0"},
           {"id", 4},
           {"method", "tools/call"},
           {"params", {{"name", "touch"}, {"arguments", {{"path", "/tmp/forbidden-x"}}}}}}
          .dump();
  auto r = l.Post(body, {{"Mcp-Session-Id", s}, {"Accept", "application/json, text/event-stream"}});
  REQUIRE(r.status == 200);
  CHECK(r.Header("Content-Type").rfind("text/event-stream", 0) == 0);
  http::SseParser parser;
  std::vector<json> events;
  parser.Feed(r.body, [&](const http::SseEvent& e) { events.push_back(json::parse(e.data)); });
  REQUIRE(events.size() == 1);
  CHECK(events[0]["id"] == 4);
  CHECK(events[0]["result"]["isError"] == true);
  CHECK(events[0]["result"]["content"][0]["text"].get<std::string>().find("fake.no_forbidden") !=
        std::string::npos);
  CHECK(l.ServerLog().find("forbidden-x") == std::string::npos);
  CHECK_FALSE(fs::exists("/tmp/forbidden-x"));
}

TEST_CASE("mcp http: DELETE ends the session and its id is then unknown", "[mcp][http]") {
  Listening l;
  std::string s = l.Initialize();
  const std::string list = R"({"jsonrpc":"2.0","id":9,"method":"tools/list"})";
  CHECK(l.Post(list, {{"Mcp-Session-Id", s}}).status == 200);
  CHECK(l.Raw("DELETE", {{"Mcp-Session-Id", s}}).status == 200);
  CHECK(l.Post(list, {{"Mcp-Session-Id", s}}).status == 404);
  CHECK(l.Raw("DELETE", {{"Mcp-Session-Id", s}}).status == 404);
  CHECK(l.Raw("GET", {{"Mcp-Session-Id", s}, {"Accept", "text/event-stream"}}).status == 404);
}

TEST_CASE("mcp http: an idle session expires, answers 404 and its server is stopped",
          "[mcp][http]") {
  Listening l(1 << 20, 400);
  const std::string list = R"({"jsonrpc":"2.0","id":9,"method":"tools/list"})";
  std::string idle = l.Initialize();
  std::string busy = l.Initialize();
  CHECK(FakeServersRunning() == 2);
  // `busy` is used every 100 ms for well over the timeout; `idle` is left alone.
  for (int i = 0; i < 12; ++i) {
    CHECK(l.Post(list, {{"Mcp-Session-Id", busy}}).status == 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(l.Post(list, {{"Mcp-Session-Id", idle}}).status == 404);
  CHECK(l.Post(list, {{"Mcp-Session-Id", busy}}).status == 200);
  CHECK(l.ListenerLog().find("MCP session " + idle + " ended: idle") != std::string::npos);
  CHECK(FakeServersRunning() == 1);  // the expired session's server was stopped and reaped
  // The client starts over with initialize, as the spec says.
  std::string again = l.Initialize();
  CHECK(l.Post(list, {{"Mcp-Session-Id", again}}).status == 200);
}

TEST_CASE("mcp http: the state resource and prompt keep out what pack.json render hides",
          "[mcp][http]") {
  Listening l;
  std::string s = l.Initialize();
  json echoed =
      l.Call(s, 2, "tools/call",
             {{"name", "echo"},
              {"arguments",
               {{"value", {{"name", "kiwi"}, {"card", "4111-1111"}}}, {"secret", "hunter2"}}}});
  REQUIRE(echoed["result"]["isError"] == false);
  const std::string state = StateOf(l, s);
  CHECK(state.find("kiwi") != std::string::npos);
  CHECK(state.find("[redacted]") != std::string::npos);
  CHECK(state.find("4111-1111") == std::string::npos);
  CHECK(state.find("hunter2") == std::string::npos);
  json prompt = l.Call(s, 3, "prompts/get", {{"name", "taskledger_state"}});
  const std::string text = prompt["result"]["messages"][0]["content"]["text"].get<std::string>();
  CHECK(text.find("kiwi") != std::string::npos);
  CHECK(text.find("4111-1111") == std::string::npos);
  CHECK(text.find("hunter2") == std::string::npos);
  // Rules and the audit still see all of it.
  auto head = l.store().ReadHead(ConversationId{"t", "h-" + s});
  REQUIRE(head.has_value());
  const Entry* secret = head->FindLive(Category::kFact, "secret", 0);
  REQUIRE(secret != nullptr);
  CHECK(secret->value == "hunter2");
  const Entry* card = head->FindLive(Category::kFact, "echoed", 0);
  REQUIRE(card != nullptr);
  CHECK(card->value["card"] == "4111-1111");
}

}  // namespace taskledger
