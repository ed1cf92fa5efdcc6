// ProxyRun: one GatingProxy run on its own thread in front of the fake MCP
// server (fake_mcp_server.cc), over real pipes, with the test as its client;
// its session writes through a memory command ledger. Shared by
// mcp_proxy_test (gating) and mcp_proxy_fault_test (failures). Tests only;
// needs FAKE_MCP_SERVER defined.
#pragma once

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fake_pack.h"
#include "taskledger/commands/memory_command_store.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/mcp_proxy/proxy.h"
#include "test_pipe.h"

namespace taskledger::testing {

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

inline std::string TextOf(const json& response) {
  return response["result"]["content"][0]["text"].get<std::string>();
}

}  // namespace taskledger::testing
