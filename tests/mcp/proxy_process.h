// ProxyProcess: the `taskledger mcp-proxy` binary in front of the fake MCP
// server (fake_mcp_server.cc), with the test as its client on stdin/stdout
// and its stderr in a file; plus the small helpers the binary's tests share
// (mcp_verb_test, mcp_observe_test). Tests only; needs TASKLEDGER_CLI and
// FAKE_MCP_SERVER defined.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fake_pack.h"
#include "test_pipe.h"

extern char** environ;

namespace taskledger::testing {

using nlohmann::json;
namespace fs = std::filesystem;

inline std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The taskledger binary running `mcp-proxy ARGS -- fake_mcp_server`, with
// the test as its client on stdin/stdout; stderr goes to a file.
class ProxyProcess {
 public:
  ProxyProcess(const fs::path& dir, std::vector<std::string> args) : dir_(dir) {
    WriteFakePack(dir / "pack");
    ::setenv("FAKE_MCP_LOG", (dir / "server.log").c_str(), 1);
    std::vector<std::string> argv = {TASKLEDGER_CLI, "mcp-proxy", "--rules",
                                     (dir / "pack").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--");
    argv.push_back(FAKE_MCP_SERVER);
    int to_child[2], from_child[2];
    REQUIRE(ClosedOnExecPipe(to_child));
    REQUIRE(ClosedOnExecPipe(from_child));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, (dir / "proxy.err").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> cargv;
    cargv.reserve(argv.size() + 1);
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    REQUIRE(::posix_spawn(&pid_, argv[0].c_str(), &actions, nullptr, cargv.data(), environ) == 0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(to_child[0]);
    ::close(from_child[1]);
    write_ = to_child[1];
    read_ = from_child[0];
  }
  ~ProxyProcess() {
    CloseClient();
    if (read_ >= 0) ::close(read_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ProxyProcess(const ProxyProcess&) = delete;
  ProxyProcess& operator=(const ProxyProcess&) = delete;

  void Send(const json& message) {
    std::string data = message.dump() + "\n";
    REQUIRE(::write(write_, data.data(), data.size()) == static_cast<ssize_t>(data.size()));
  }
  // The next message from the proxy, or null after 10 s.
  json Receive() {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (true) {
      if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return json::parse(line);
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) return nullptr;
      pollfd p{read_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char buf[65536];
      ssize_t n = ::read(read_, buf, sizeof buf);
      if (n <= 0) return nullptr;
      buffer_.append(buf, static_cast<size_t>(n));
    }
  }
  void Initialize() {
    Send({{"jsonrpc", "2.0"},
          {"id", 0},
          {"method", "initialize"},
          {"params",
           {{"protocolVersion", "2025-06-18"},
            {"capabilities", json::object()},
            {"clientInfo", {{"name", "test", "version", "1"}}}}}});
    REQUIRE(Receive()["id"] == 0);
    Send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  }
  json Call(int id, const std::string& tool, const json& arguments) {
    Send({{"jsonrpc", "2.0"},
          {"id", id},
          {"method", "tools/call"},
          {"params", {{"name", tool}, {"arguments", arguments}}}});
    return Receive();
  }
  void CloseClient() {
    if (write_ >= 0) ::close(write_);
    write_ = -1;
  }
  // Closes stdin and waits for the exit code.
  int Finish() {
    CloseClient();
    int status = 0;
    REQUIRE(::waitpid(pid_, &status, 0) == pid_);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string ServerSaw() const { return ReadAll(dir_ / "server.log"); }
  std::string Stderr() const { return ReadAll(dir_ / "proxy.err"); }

 private:
  fs::path dir_;
  pid_t pid_ = -1;
  int write_ = -1, read_ = -1;
  std::string buffer_;
};

inline fs::path FreshDir(const std::string& name) {
  static int counter = 0;
  fs::path dir = fs::temp_directory_path() / ("tl-mcp-verb-" + std::to_string(::getpid()) + "-" +
                                              std::to_string(counter++) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace taskledger::testing
