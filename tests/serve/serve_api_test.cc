// `taskledger serve` through the real binary over loopback HTTP: a whole
// subscription conversation (blocked write, verifying read reported back,
// the write leased with its idempotency key and settled once, a repeat
// deduplicated, a refund held for approval, approved by an operator and run),
// the reads (versions, decisions, state, diff, state block), hostile input
// answered with the right status and nothing written, and the memory store
// and a real redis-server.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "serve_process.h"
#include "support/redis_server.h"

namespace taskledger::serve_test {
namespace {

using nlohmann::json;

std::string Rules() { return std::string(TASKLEDGER_SOURCE_DIR) + "/rules/subscription"; }

json Call(const std::string& id, const std::string& tool, json args = json::object()) {
  return {{"id", id}, {"tool", tool}, {"arguments", std::move(args)}};
}

// The whole conversation of the file comment against one server.
void RunConversation(ServeProcess& s, const std::string& conv) {
  Reply open = s.Post("/v1/open", {{"conversation", conv}});
  REQUIRE(open.status == 200);
  CHECK(open.body["conversation"] == conv);
  CHECK(open.body["version"] == 0);

  // A change before the identity is verified: denied, nothing to run.
  Reply denied =
      s.Post("/v1/propose",
             {{"conversation", conv}, {"call", Call("c1", "cancel_subscription", {{"id", "S1"}})}});
  REQUIRE(denied.status == 200);
  CHECK(denied.body["execute"] == false);
  CHECK(denied.body["decision"]["outcome"] == "deny");
  CHECK(denied.body["decision"]["rule_id"] == "subscription.identity_verified");
  CHECK(denied.body["message"].get<std::string>().find("verify_identity") != std::string::npos);
  CHECK_FALSE(denied.body.contains("command"));

  // The read runs at the client; its output verifies the identity.
  Reply read =
      s.Post("/v1/propose", {{"conversation", conv}, {"call", Call("c2", "verify_identity")}});
  REQUIRE(read.status == 200);
  CHECK(read.body["execute"] == true);
  CHECK(read.body["decision"]["read_only"] == true);
  Reply reported = s.Post("/v1/outcome", {{"conversation", conv},
                                          {"call", Call("c2", "verify_identity")},
                                          {"status", "ok"},
                                          {"output", {{"verified", true}}}});
  REQUIRE(reported.status == 200);
  Reply state = s.Post("/v1/state", {{"conversation", conv}});
  REQUIRE(state.status == 200);
  CHECK(state.raw.find("identity_verified") != std::string::npos);

  // Now the write is allowed: reserved, written ahead, leased to the client.
  Reply write =
      s.Post("/v1/propose",
             {{"conversation", conv}, {"call", Call("c3", "cancel_subscription", {{"id", "S1"}})}});
  REQUIRE(write.status == 200);
  REQUIRE(write.body["execute"] == true);
  const json command = write.body["command"];
  CHECK(command["state"] == "leased");
  const std::string idem = command["idempotency_key"];
  CHECK_FALSE(idem.empty());
  // The same client asking again (its answer lost) gets the same lease.
  Reply again =
      s.Post("/v1/propose",
             {{"conversation", conv}, {"call", Call("c3", "cancel_subscription", {{"id", "S1"}})}});
  REQUIRE(again.status == 200);
  CHECK(again.body["execute"] == true);
  CHECK(again.body["command"]["fencing_token"] == command["fencing_token"]);

  Reply settled =
      s.Post("/v1/outcome", {{"conversation", conv},
                             {"call", Call("c3", "cancel_subscription", {{"id", "S1"}})},
                             {"status", "ok"},
                             {"output", {{"cancelled", true}}},
                             {"command_key", command["command_key"]},
                             {"fencing_token", command["fencing_token"]}});
  REQUIRE(settled.status == 200);
  CHECK(settled.body["command"]["state"] == "succeeded");
  // Reported twice (a retried request): same answer, the command unchanged.
  Reply twice = s.Post("/v1/outcome", {{"conversation", conv},
                                       {"call", Call("c3", "cancel_subscription", {{"id", "S1"}})},
                                       {"status", "ok"},
                                       {"output", {{"cancelled", true}}},
                                       {"command_key", command["command_key"]},
                                       {"fencing_token", command["fencing_token"]}});
  REQUIRE(twice.status == 200);
  CHECK(twice.body["command"]["state"] == "succeeded");

  // The model proposing the same write again: not run twice.
  Reply dup = s.Post("/v1/propose", {{"conversation", conv},
                                     {"call", Call("c4", "cancel_subscription", {{"id", "S1"}})}});
  REQUIRE(dup.status == 200);
  CHECK(dup.body["execute"] == false);
  CHECK(dup.body["message"].get<std::string>().find("Already done") != std::string::npos);

  // A refund waits for an operator.
  Reply refund = s.Post(
      "/v1/propose", {{"conversation", conv},
                      {"call", Call("c5", "refund_subscription", {{"id", "S1"}, {"amount", 12}})}});
  REQUIRE(refund.status == 200);
  CHECK(refund.body["execute"] == false);
  CHECK(refund.body["decision"]["outcome"] == "require_approval");
  CHECK(refund.body["command"]["state"] == "blocked");
  Reply held = s.Post("/v1/commands/list", {{"conversation", conv}, {"state", "blocked"}});
  REQUIRE(held.status == 200);
  REQUIRE(held.body["commands"].size() == 1);
  Reply approved =
      s.Post("/v1/commands/approve", {{"conversation", conv},
                                      {"command_key", refund.body["command"]["command_key"]},
                                      {"reason", "checked the invoice"}});
  REQUIRE(approved.status == 200);
  CHECK(approved.body["command"]["state"] == "approved");
  Reply run = s.Post("/v1/propose",
                     {{"conversation", conv},
                      {"call", Call("c6", "refund_subscription", {{"id", "S1"}, {"amount", 12}})}});
  REQUIRE(run.status == 200);
  CHECK(run.body["execute"] == true);
  CHECK(run.body["command"]["state"] == "leased");
  CHECK(run.body["decision"]["rule_id"] == "taskledger.operator_approval");

  Reply end = s.Post("/v1/end-turn", {{"conversation", conv}});
  REQUIRE(end.status == 200);
  const uint64_t head = end.body["version"];
  CHECK(head > 3);

  Reply versions = s.Post("/v1/versions", {{"conversation", conv}});
  REQUIRE(versions.status == 200);
  CHECK(versions.body["head"] == head);
  CHECK(versions.body["turns"].size() == head);
  Reply decisions = s.Post("/v1/decisions", {{"conversation", conv}});
  REQUIRE(decisions.status == 200);
  bool saw_denial = false;
  for (const json& d : decisions.body["decisions"]) {
    saw_denial = saw_denial || d.value("rule", "") == "subscription.identity_verified";
  }
  CHECK(saw_denial);
  Reply diff = s.Post("/v1/diff", {{"conversation", conv}, {"from", 0}, {"to", head}});
  REQUIRE(diff.status == 200);
  CHECK(diff.raw.find("identity_verified") != std::string::npos);
  Reply block = s.Post("/v1/render", {{"conversation", conv}});
  REQUIRE(block.status == 200);
  CHECK(block.body["state_block"].get<std::string>().find("identity_verified") !=
        std::string::npos);
}

}  // namespace

TEST_CASE("serve: a whole conversation over HTTP on the memory store", "[serve]") {
  ServeProcess s({"--rules", Rules()});
  CHECK(s.listening_line().find("store memory") != std::string::npos);
  RunConversation(s, "conv-memory");
  Reply health = s.Send("GET", "/healthz", "");
  CHECK(health.status == 200);
  Reply ready = s.Send("GET", "/readyz", "");
  CHECK(ready.status == 200);
  Reply metrics = s.Send("GET", "/metrics", "");
  REQUIRE(metrics.status == 200);
  CHECK(metrics.raw.find("taskledger_serve_decisions_total{outcome=\"deny\"} 1") !=
        std::string::npos);
  CHECK(metrics.raw.find("taskledger_serve_request_seconds_bucket{le=\"+Inf\"}") !=
        std::string::npos);
  CHECK(s.Stop() == 0);
}

TEST_CASE("serve: a whole conversation over HTTP on a real Redis", "[serve][redis]") {
  ServeProcess s({"--rules", Rules(), "--store", testing::SharedRedisUrl(), "--tenant",
                  "serve-api-" + std::to_string(::getpid())});
  RunConversation(s, "conv-redis");
}

TEST_CASE("serve: hostile requests get the right status and write nothing", "[serve]") {
  ServeProcess s({"--rules", Rules(), "--max-body-bytes", "4096"});
  const std::string conv = "hostile";
  CHECK(s.Send("POST", "/v1/propose", "{not json").status == 400);
  CHECK(s.Send("POST", "/v1/propose", "[1,2]").status == 400);
  CHECK(s.Send("POST", "/v1/propose", std::string(200, '[') + std::string(200, ']')).status == 400);
  Reply missing = s.Post("/v1/propose", {{"conversation", conv}});
  CHECK(missing.status == 400);
  CHECK(missing.body["error"]["code"] == "invalid_argument");
  CHECK(s.Post("/v1/propose", {{"conversation", conv}, {"call", {{"tool", 7}}}}).status == 400);
  CHECK(
      s.Post("/v1/outcome",
             {{"conversation", conv}, {"call", Call("x", "verify_identity")}, {"status", "maybe"}})
          .status == 400);
  // A report for a lease that was never handed out.
  Reply unknown = s.Post("/v1/outcome", {{"conversation", conv},
                                         {"call", Call("x", "cancel_subscription")},
                                         {"command_key", "nope"},
                                         {"fencing_token", 1}});
  CHECK(unknown.status == 404);
  CHECK(s.Send("POST", "/v1/propose",
               json{{"conversation", conv}, {"pad", std::string(8000, 'x')}}.dump())
            .status == 413);
  CHECK(s.Send("GET", "/v1/propose", "").status == 405);
  CHECK(s.Send("POST", "/v2/nothing", "{}").status == 404);
  http::Headers many;
  for (int i = 0; i < 100; ++i) many.emplace_back("X-H" + std::to_string(i), "v");
  CHECK(s.Send("POST", "/v1/open", "{}", many).status == 431);
  Reply versions = s.Post("/v1/versions", {{"conversation", conv}});
  REQUIRE(versions.status == 200);
  CHECK(versions.body["head"] == 0);  // nothing was written
  Reply approve = s.Post("/v1/commands/approve",
                         {{"conversation", conv}, {"command_key", "nope"}, {"reason", "r"}});
  CHECK(approve.status == 404);
}

TEST_CASE("serve: without --rules every tool is denied, never allowed", "[serve]") {
  ServeProcess s({});
  CHECK(s.listening_line().find("every tool is denied") != std::string::npos);
  Reply r = s.Post("/v1/propose", {{"conversation", "c"}, {"call", Call("1", "rm_rf")}});
  REQUIRE(r.status == 200);
  CHECK(r.body["execute"] == false);
  CHECK(r.body["decision"]["rule_id"] == "taskledger.unknown_tool");
}

TEST_CASE("serve: with no arguments it listens on 127.0.0.1:8420", "[serve]") {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(8420);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  if (!free) {
    WARN("port 8420 is taken on this machine; the no-argument start is not checked");
    return;
  }
  ServeProcess s({}, /*add_listen=*/false);
  CHECK(s.port() == 8420);
  CHECK(s.Send("GET", "/healthz", "").status == 200);
}

TEST_CASE("serve: bad usage exits 2 with a reason", "[serve]") {
  std::string err;
  CHECK(RunServeToExit({"--listen", "nope:port"}, err) == 2);
  CHECK(err.find("--listen") != std::string::npos);
  err.clear();
  CHECK(RunServeToExit({"--rules", "/nonexistent/pack"}, err) == 2);
  err.clear();
  CHECK(RunServeToExit({"--tokens", "/nonexistent/tokens"}, err) == 2);
  CHECK(err.find("token file") != std::string::npos);
}

}  // namespace taskledger::serve_test
