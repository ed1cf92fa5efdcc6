// `taskledger mcp-proxy` as a user runs it: the binary on stdio in front of
// the fake MCP server (fake_mcp_server.cc), a memory or a real Redis store.
// A proxied write is a command of the run {tenant, conversation} with its
// deciding rule and an idempotency key that reaches the server; the same
// JSON-RPC request sent again does not reach the server twice.
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
#include "support/redis_server.h"
#include "taskledger/commands/redis_command_store.h"

extern char** environ;

namespace taskledger {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The taskledger binary running `mcp-proxy ARGS -- fake_mcp_server`, with
// the test as its client on stdin/stdout; stderr goes to a file.
class ProxyProcess {
 public:
  ProxyProcess(const fs::path& dir, std::vector<std::string> args) : dir_(dir) {
    testing::WriteFakePack(dir / "pack");
    ::setenv("FAKE_MCP_LOG", (dir / "server.log").c_str(), 1);
    std::vector<std::string> argv = {TASKLEDGER_CLI, "mcp-proxy", "--rules",
                                     (dir / "pack").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--");
    argv.push_back(FAKE_MCP_SERVER);
    int to_child[2], from_child[2];
    REQUIRE(::pipe2(to_child, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(from_child, O_CLOEXEC) == 0);
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

fs::path FreshDir(const std::string& name) {
  static int counter = 0;
  fs::path dir = fs::temp_directory_path() / ("tl-mcp-verb-" + std::to_string(::getpid()) + "-" +
                                              std::to_string(counter++) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Sends a write, the same request again, a new request with the same
// arguments and a denied write; checks what the client and the server saw.
// Returns the path written.
std::string WriteTwiceAndRetry(ProxyProcess& proxy, const fs::path& dir) {
  proxy.Initialize();
  std::string target = (dir / "once.txt").string();
  json first = proxy.Call(1, "touch", {{"path", target}});
  CHECK(first["result"]["isError"] == false);
  CHECK(fs::exists(target));
  fs::remove(target);
  json retried = proxy.Call(1, "touch", {{"path", target}});
  CHECK(retried["id"] == 1);
  CHECK(retried["result"]["isError"] == false);
  CHECK_FALSE(fs::exists(target));  // not run again
  json fresh = proxy.Call(2, "touch", {{"path", target}});
  CHECK(fresh["result"]["isError"] == false);
  CHECK(fs::exists(target));  // a new request is a new command
  json denied = proxy.Call(3, "touch", {{"path", (dir / "forbidden").string()}});
  CHECK(denied["result"]["isError"] == true);
  const std::string saw = proxy.ServerSaw();
  CHECK(Count(saw, "\"method\":\"tools/call\"") == 2);  // requests 1 and 2 only
  CHECK(Count(saw, "taskledger/idempotencyKey") == 2);
  CHECK(saw.find("forbidden") == std::string::npos);
  return target;
}

TEST_CASE("mcp-proxy on a memory store: the same request is not forwarded twice", "[mcp]") {
  fs::path dir = FreshDir("memory");
  ProxyProcess proxy(dir, {"--conversation", "verb-memory"});
  WriteTwiceAndRetry(proxy, dir);
  CHECK(proxy.Finish() == 0);
  CHECK_THAT(proxy.Stderr(), Catch::Contains("2 calls forwarded"));
}

TEST_CASE("mcp-proxy on Redis: a proxied write is a command naming its rule, its key sent",
          "[mcp]") {
  std::string url = testing::SharedRedisUrl();
  fs::path dir = FreshDir("redis");
  std::string conversation =
      "verb-redis-" + std::to_string(::getpid()) + "-" +
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  ProxyProcess proxy(dir, {"--store", url, "--tenant", "mcpverb", "--conversation", conversation});
  std::string target = WriteTwiceAndRetry(proxy, dir);
  CHECK(proxy.Finish() == 0);

  RedisOptions redis;
  redis.url = url;
  auto store = OpenRedisCommandStore(redis);
  REQUIRE(store.has_value());
  auto commands = (*store)->ListCommands(RunId{"mcpverb", conversation});
  REQUIRE(commands.has_value());
  REQUIRE(commands->size() == 2);  // requests 1 and 2; the retry and the denial are not commands
  const std::string saw = proxy.ServerSaw();
  for (const Command& c : *commands) {
    CHECK(c.tool == "touch");
    CHECK(c.target == target);
    CHECK(c.state == CommandState::kSucceeded);
    CHECK(c.attempts == 1);
    CHECK(c.decision["decision"] == "allow");
    CHECK(c.decision["rule"] == "fake.no_forbidden");
    CHECK_FALSE(c.idempotency_key.empty());
    CHECK(saw.find(c.idempotency_key) != std::string::npos);
  }
  CHECK((*commands)[0].step != (*commands)[1].step);
}

// `taskledger commands ARGS` on the Redis store; its exit code.
int CommandsVerb(const std::vector<std::string>& args) {
  std::string line = std::string(TASKLEDGER_CLI) + " commands";
  for (const std::string& a : args) line += " '" + a + "'";
  line += " >/dev/null 2>&1";
  int status = std::system(line.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_CASE("mcp-proxy: a held write runs once after commands approve, a denied one is told",
          "[mcp]") {
  std::string url = testing::SharedRedisUrl();
  fs::path dir = FreshDir("approval");
  std::string conversation =
      "verb-approval-" + std::to_string(::getpid()) + "-" +
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  ProxyProcess proxy(dir, {"--store", url, "--tenant", "mcpverb", "--conversation", conversation});
  proxy.Initialize();
  std::string held = (dir / "approval-yes.txt").string();
  std::string refused = (dir / "approval-no.txt").string();

  json waits = proxy.Call(1, "publish", {{"path", held}});
  CHECK(waits["result"]["isError"] == true);
  CHECK_THAT(waits["result"]["content"][0]["text"].get<std::string>(),
             Catch::Contains("fake.needs_approval") && Catch::Contains("approves it"));
  json waits_too = proxy.Call(2, "publish", {{"path", refused}});
  CHECK(waits_too["result"]["isError"] == true);
  CHECK_FALSE(fs::exists(held));
  CHECK(Count(proxy.ServerSaw(), "\"method\":\"tools/call\"") == 0);

  RedisOptions redis;
  redis.url = url;
  auto store = OpenRedisCommandStore(redis);
  REQUIRE(store.has_value());
  RunId run{"mcpverb", conversation};
  auto blocked = (*store)->ListCommands(run);
  REQUIRE(blocked.has_value());
  REQUIRE(blocked->size() == 2);
  for (const Command& c : *blocked) CHECK(c.state == CommandState::kBlocked);
  const std::string yes_key =
      (*blocked)[0].target == held ? (*blocked)[0].command_key : (*blocked)[1].command_key;
  const std::string no_key =
      (*blocked)[0].target == held ? (*blocked)[1].command_key : (*blocked)[0].command_key;
  const std::vector<std::string> where = {"--store", url, "--tenant", "mcpverb"};
  auto verb = [&](const std::string& action, const std::string& key, const std::string& why) {
    std::vector<std::string> args = {action, conversation, key, "--reason", why};
    args.insert(args.end(), where.begin(), where.end());
    return CommandsVerb(args);
  };
  REQUIRE(verb("approve", yes_key, "checked by ops") == 0);
  REQUIRE(verb("deny", no_key, "not this one") == 0);

  // The model retries with the same arguments: the approved call runs, once.
  json ran = proxy.Call(3, "publish", {{"path", held}});
  CHECK(ran["id"] == 3);
  CHECK(ran["result"]["isError"] == false);
  CHECK(fs::exists(held));
  json told = proxy.Call(4, "publish", {{"path", refused}});
  CHECK(told["result"]["isError"] == true);
  CHECK_THAT(told["result"]["content"][0]["text"].get<std::string>(),
             Catch::Contains("not this one"));
  CHECK_FALSE(fs::exists(refused));
  CHECK(proxy.Finish() == 0);
  const std::string saw = proxy.ServerSaw();
  CHECK(Count(saw, "\"method\":\"tools/call\"") == 1);
  CHECK(saw.find("approval-no.txt") == std::string::npos);

  auto settled = (*store)->ListCommands(run);
  REQUIRE(settled.has_value());
  REQUIRE(settled->size() == 2);  // the retries made no new commands
  for (const Command& c : *settled) {
    CHECK(c.state ==
          (c.command_key == yes_key ? CommandState::kSucceeded : CommandState::kCancelled));
  }
}

TEST_CASE("mcp-proxy restarted between approve and retry: the held call runs once, from the store",
          "[mcp]") {
  std::string url = testing::SharedRedisUrl();
  fs::path dir = FreshDir("approval-restart");
  std::string conversation =
      "verb-restart-" + std::to_string(::getpid()) + "-" +
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  const std::vector<std::string> args = {"--store",        url,         "--tenant", "mcpverb",
                                         "--conversation", conversation};
  std::string held = (dir / "restart-yes.txt").string();
  std::string refused = (dir / "restart-no.txt").string();
  RedisOptions redis;
  redis.url = url;
  auto store = OpenRedisCommandStore(redis);
  REQUIRE(store.has_value());
  RunId run{"mcpverb", conversation};
  auto commands = [&] {
    auto listed = (*store)->ListCommands(run);
    REQUIRE(listed.has_value());
    return *listed;
  };
  {
    ProxyProcess first(dir, args);
    first.Initialize();
    CHECK(first.Call(1, "publish", {{"path", held}})["result"]["isError"] == true);
    CHECK(first.Call(2, "publish", {{"path", refused}})["result"]["isError"] == true);
    // A retry before the operator decided: told it still waits, no second command.
    json early = first.Call(3, "publish", {{"path", held}});
    CHECK_THAT(early["result"]["content"][0]["text"].get<std::string>(),
               Catch::Contains("approves it"));
    CHECK(first.Finish() == 0);
  }
  std::vector<Command> blocked = commands();
  REQUIRE(blocked.size() == 2);
  const Command& yes = blocked[0].target == held ? blocked[0] : blocked[1];
  const Command& no = blocked[0].target == held ? blocked[1] : blocked[0];
  REQUIRE(CommandsVerb({"approve", conversation, yes.command_key, "--reason", "ok by ops",
                        "--store", url, "--tenant", "mcpverb"}) == 0);
  REQUIRE(CommandsVerb({"deny", conversation, no.command_key, "--reason", "not this one", "--store",
                        url, "--tenant", "mcpverb"}) == 0);
  {
    // A second proxy process: its first write runs the approved call; it then exits.
    ProxyProcess second(dir, args);
    second.Initialize();
    CHECK(second.Call(1, "touch", {{"path", (dir / "other.txt").string()}})["result"]["isError"] ==
          false);
    CHECK(fs::exists(held));
    CHECK(second.Finish() == 0);
  }
  fs::remove(held);
  ProxyProcess third(dir, args);
  third.Initialize();
  // The client's retries reach a proxy that never saw the calls: answered from the store.
  json ran = third.Call(7, "publish", {{"path", held}});
  CHECK(ran["id"] == 7);
  CHECK(ran["result"]["isError"] == false);
  CHECK_THAT(ran["result"]["content"][0]["text"].get<std::string>(),
             Catch::Contains("already succeeded"));
  CHECK_FALSE(fs::exists(held));  // not run a second time
  json told = third.Call(8, "publish", {{"path", refused}});
  CHECK(told["result"]["isError"] == true);
  CHECK_THAT(told["result"]["content"][0]["text"].get<std::string>(),
             Catch::Contains("not this one"));
  // Once its outcome was given, the same call again is a new request for approval.
  json again = third.Call(9, "publish", {{"path", held}});
  CHECK_THAT(again["result"]["content"][0]["text"].get<std::string>(),
             Catch::Contains("approves it"));
  CHECK(third.Finish() == 0);
  const std::string saw = third.ServerSaw();
  CHECK(Count(saw, "\"method\":\"tools/call\"") == 2);  // the touch and the approved publish
  CHECK(saw.find("restart-no.txt") == std::string::npos);
  std::vector<Command> after = commands();
  REQUIRE(after.size() == 4);  // the two held, the touch, the new request
  size_t succeeded = 0, cancelled = 0, still_blocked = 0;
  for (const Command& c : after) {
    succeeded += c.state == CommandState::kSucceeded;
    cancelled += c.state == CommandState::kCancelled;
    still_blocked += c.state == CommandState::kBlocked;
  }
  CHECK(succeeded == 2);
  CHECK(cancelled == 1);
  CHECK(still_blocked == 1);
}

}  // namespace
}  // namespace taskledger
