// 1,000 conversations at once from one client process against one
// `taskledger serve`: 32 keep-alive connections, each driving its share of
// the conversations step by step in rounds, so every conversation is open
// and interleaved with the others from the first round to the last. Half of
// them verify the customer's identity before cancelling (allowed: leased,
// run, settled), half do not (denied). At the end every conversation's
// versions, decision records and commands are read back and must be exactly
// its own: no step lost, doubled or crossed into another conversation. On
// the memory store, and on a real Redis (SharedRedisUrl).
// Client threads touch no Catch macro (not thread-safe); the main thread
// checks what they collected.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <mutex>
#include <thread>

#include "serve_process.h"
#include "support/redis_server.h"

namespace taskledger::serve_test {
namespace {

using nlohmann::json;

constexpr int kConversations = 1000;
constexpr int kConnections = 32;

// One conversation as its client thread drives it.
struct Conversation {
  std::string name;
  bool verifies = false;  // verifies the identity first, so the cancel is allowed
  uint64_t acked = 0;     // the highest version an answer acknowledged
  std::string failure;
  json command;  // the leased cancel (verifying conversations)
};

// The request of `c`'s step `step`, or null when it has no such step.
json StepRequest(const Conversation& c, int step, std::string& path) {
  const json verify = {{"id", "v"}, {"tool", "verify_identity"}, {"arguments", json::object()}};
  const json cancel = {
      {"id", "w"}, {"tool", "cancel_subscription"}, {"arguments", {{"id", c.name}}}};
  switch (step) {
    case 0:
      path = "/v1/open";
      return {{"conversation", c.name}};
    case 1:
      path = "/v1/message";
      return {{"conversation", c.name}, {"text", "please cancel subscription " + c.name}};
    case 2:
      path = "/v1/propose";
      return {{"conversation", c.name}, {"call", verify}};
    case 3:
      path = "/v1/outcome";
      return {{"conversation", c.name}, {"call", verify}, {"output", {{"verified", c.verifies}}}};
    case 4:
      path = "/v1/propose";
      return {{"conversation", c.name}, {"call", cancel}};
    case 5:
      if (!c.verifies) return nullptr;
      path = "/v1/outcome";
      return {{"conversation", c.name},
              {"call", cancel},
              {"output", {{"cancelled", true}}},
              {"command_key", c.command["command_key"]},
              {"fencing_token", c.command["fencing_token"]}};
    default:
      return nullptr;
  }
}

// Drives `mine` in rounds over one keep-alive connection.
void Drive(int port, const std::vector<Conversation*>& mine) {
  auto client = http::Client::Open("http://127.0.0.1:" + std::to_string(port),
                                   http::ClientOptions{5000, 60'000, 60'000});
  for (int step = 0; step < 6; ++step) {
    for (Conversation* c : mine) {
      if (!c->failure.empty()) continue;
      std::string path;
      json body = StepRequest(*c, step, path);
      if (body.is_null()) continue;
      if (!client) {
        c->failure = "no connection";
        continue;
      }
      auto r = (*client)->Send("POST", path, {}, body.dump(), "application/json");
      if (!r || r->status != 200) {
        c->failure =
            path + ": " + (r ? std::to_string(r->status) + " " + r->body : r.error().ToString());
        continue;
      }
      json answer = json::parse(r->body, nullptr, false);
      uint64_t v = answer.value("version", uint64_t{0});
      if (v < c->acked) c->failure = path + ": version went back";
      c->acked = std::max(c->acked, v);
      if (step == 4) {
        const bool allowed = answer["decision"]["outcome"] == "allow";
        if (allowed != c->verifies || answer.value("execute", false) != c->verifies) {
          c->failure = "cancel decided " + answer["decision"].dump();
        }
        if (c->verifies) c->command = answer["command"];
      }
    }
  }
}

// Reads `c` back and says what is wrong with it (empty: nothing).
std::string Check(ServeProcess& s, const Conversation& c) {
  if (!c.failure.empty()) return c.failure;
  Reply versions = s.Post("/v1/versions", {{"conversation", c.name}});
  if (versions.status != 200) return "versions: " + versions.raw;
  if (versions.body["head"] != c.acked) {
    return "head " + versions.body["head"].dump() + " != acknowledged " + std::to_string(c.acked);
  }
  Reply decisions = s.Post("/v1/decisions", {{"conversation", c.name}});
  if (decisions.status != 200) return "decisions: " + decisions.raw;
  std::vector<std::string> seen;
  for (const json& d : decisions.body["decisions"]) {
    if (d["conversation"] != c.name) return "a decision of " + d["conversation"].dump();
    seen.push_back(d["tool"].get<std::string>() + ":" + d["decision"].get<std::string>());
  }
  const std::vector<std::string> want = {
      "verify_identity:allow",
      std::string("cancel_subscription:") + (c.verifies ? "allow" : "deny")};
  if (seen != want) return "decisions " + decisions.body["decisions"].dump();
  Reply commands = s.Post("/v1/commands/list", {{"conversation", c.name}});
  if (commands.status != 200) return "commands: " + commands.raw;
  const json& list = commands.body["commands"];
  if (list.size() != (c.verifies ? 1u : 0u)) return "commands " + list.dump();
  if (c.verifies && (list[0]["state"] != "succeeded" ||
                     list[0]["idempotency_key"] != c.command["idempotency_key"])) {
    return "command " + list[0].dump();
  }
  return "";
}

void RunThousand(const std::vector<std::string>& store_args, const std::string& prefix) {
  std::vector<std::string> args = {"--rules",
                                   std::string(TASKLEDGER_SOURCE_DIR) + "/rules/subscription",
                                   "--threads",
                                   "32",
                                   "--max-concurrent-per-tenant",
                                   "0"};
  args.insert(args.end(), store_args.begin(), store_args.end());
  ServeProcess s(args);
  std::vector<Conversation> all(kConversations);
  for (int i = 0; i < kConversations; ++i) {
    all[i].name = prefix + std::to_string(i);
    all[i].verifies = i % 2 == 1;
  }
  std::vector<std::thread> clients;
  for (int t = 0; t < kConnections; ++t) {
    std::vector<Conversation*> mine;
    for (int i = t; i < kConversations; i += kConnections) mine.push_back(&all[i]);
    clients.emplace_back(Drive, s.port(), std::move(mine));
  }
  for (std::thread& t : clients) t.join();
  int wrong = 0;
  std::string first_problems;
  for (const Conversation& c : all) {
    std::string problem = Check(s, c);
    if (problem.empty()) continue;
    if (++wrong <= 5) first_problems += c.name + ": " + problem + "\n";
  }
  INFO(first_problems);
  CHECK(wrong == 0);
  CHECK(s.Stop() == 0);
}

}  // namespace

TEST_CASE("serve: 1000 concurrent conversations on the memory store are each right",
          "[serve][e2e]") {
  RunThousand({}, "m-");
}

TEST_CASE("serve: 1000 concurrent conversations on Redis are each right", "[serve][e2e][redis]") {
  RunThousand(
      {"--store", testing::SharedRedisUrl(), "--tenant", "scale-" + std::to_string(::getpid())},
      "r-");
}

}  // namespace taskledger::serve_test
