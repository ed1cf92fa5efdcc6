// `taskledger mcp-proxy` as a user runs it: the binary on stdio in front of
// the fake MCP server (fake_mcp_server.cc), a memory or a real Redis store.
// A proxied write is a command of the run {tenant, conversation} with its
// deciding rule and an idempotency key that reaches the server; the same
// JSON-RPC request sent again does not reach the server twice.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fake_pack.h"
#include "proxy_process.h"
#include "support/redis_server.h"
#include "taskledger/commands/redis_command_store.h"

namespace taskledger {
namespace {

using nlohmann::json;
using testing::Count;
using testing::FreshDir;
using testing::ProxyProcess;
namespace fs = std::filesystem;

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
    CHECK(c.call.tool == "touch");
    CHECK(c.target == target);
    CHECK(c.state == CommandState::kSucceeded);
    CHECK(c.attempts == 1);
    CHECK(c.decision.Verdict() == "allow");
    CHECK(c.decision.Rule() == "fake.no_forbidden");
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
