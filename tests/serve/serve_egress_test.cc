// `taskledger serve` and an egress tool (pack.json tools.egress: it reads,
// but the request carries data out), through the real binary over loopback
// HTTP on the memory store and a real redis-server: an egress call is gated
// and logged like a write (a denied one is refused with its rule's reason,
// an allowed one is written ahead and its decision is in the decision log)
// but is never a command of the command ledger (no lease to hold, nothing in
// /v1/commands/list, reported without a command key), while a write in the
// same conversation still is one.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "serve_process.h"
#include "support/redis_server.h"

namespace taskledger::serve_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A pack whose egress tool may fetch pages of one documentation site only,
// and whose write (post_note) is always allowed.
fs::path MakeEgressPack() {
  fs::path dir = fs::temp_directory_path() / ("tl-serve-egress-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "pack.json") << R"({
  "name": "web-egress",
  "tools": {"read_only": ["get_time"], "writes": ["post_note"], "egress": ["get_webpage"]},
  "unknown_tools": "deny"
})";
  std::ofstream(dir / "policy.lua") << R"(
rule {
  id = "web.docs_only", tools = {"get_webpage"},
  check = function(call, ledger)
    local url = call.args.url
    if type(url) == "string" and url:find("^https://docs%.example%.org/") then return allow() end
    return deny("get_webpage may only fetch https://docs.example.org/, not " .. tostring(url))
  end,
}
)";
  return dir;
}

json Call(const std::string& id, const std::string& tool, json args) {
  return {{"id", id}, {"tool", tool}, {"arguments", std::move(args)}};
}

void RunEgress(ServeProcess& s, const std::string& conv) {
  REQUIRE(s.Post("/v1/open", {{"conversation", conv}}).status == 200);

  // Refused with its rule's reason; nothing to run.
  Reply denied =
      s.Post("/v1/propose",
             {{"conversation", conv},
              {"call", Call("c1", "get_webpage", {{"url", "https://evil.example.net/?d=1"}})}});
  REQUIRE(denied.status == 200);
  CHECK(denied.body["execute"] == false);
  CHECK(denied.body["decision"]["outcome"] == "deny");
  CHECK(denied.body["decision"]["rule_id"] == "web.docs_only");
  CHECK(denied.body["decision"]["egress"] == true);
  CHECK(denied.body["message"].get<std::string>().find(
            "may only fetch https://docs.example.org/, not https://evil.example.net/?d=1") !=
        std::string::npos);
  CHECK_FALSE(denied.body.contains("command"));

  // Allowed: gated like a write (not read-only, written ahead: the version
  // moved before the client ran anything) but no command, no lease.
  const json page = Call("c2", "get_webpage", {{"url", "https://docs.example.org/setup"}});
  Reply allowed = s.Post("/v1/propose", {{"conversation", conv}, {"call", page}});
  REQUIRE(allowed.status == 200);
  CHECK(allowed.body["execute"] == true);
  CHECK(allowed.body["decision"]["outcome"] == "allow");
  CHECK(allowed.body["decision"]["read_only"] == false);
  CHECK(allowed.body["decision"]["egress"] == true);
  CHECK(allowed.body["decision_record"]["call_id"] == "c2");
  CHECK_FALSE(allowed.body.contains("command"));
  CHECK(allowed.body["version"].get<uint64_t>() > denied.body["version"].get<uint64_t>());
  // Reported without a command key, as a call that is no command is.
  Reply reported = s.Post("/v1/outcome", {{"conversation", conv},
                                          {"call", page},
                                          {"status", "ok"},
                                          {"output", "Setup: run the installer."}});
  REQUIRE(reported.status == 200);
  CHECK(reported.body["message_is_error"] == false);
  CHECK_FALSE(reported.body.contains("command"));

  // A write in the same conversation is still a command, leased to the client.
  Reply write = s.Post("/v1/propose", {{"conversation", conv},
                                       {"call", Call("c3", "post_note", {{"text", "done"}})}});
  REQUIRE(write.status == 200);
  CHECK(write.body["decision"]["egress"] == false);
  REQUIRE(write.body.contains("command"));
  CHECK(write.body["command"]["state"] == "leased");
  CHECK(write.body["command"]["tool"] == "post_note");

  Reply listed = s.Post("/v1/commands/list", {{"conversation", conv}});
  REQUIRE(listed.status == 200);
  REQUIRE(listed.body["commands"].size() == 1);  // the write's, none for get_webpage
  CHECK(listed.body["commands"][0]["tool"] == "post_note");

  // Both egress decisions are in the decision log, with the rule that decided.
  REQUIRE(s.Post("/v1/end-turn", {{"conversation", conv}}).status == 200);
  Reply decisions = s.Post("/v1/decisions", {{"conversation", conv}});
  REQUIRE(decisions.status == 200);
  std::vector<std::string> logged;
  for (const json& d : decisions.body["decisions"]) {
    logged.push_back(d.value("call_id", "") + ":" + d.value("tool", "") + ":" +
                     d.value("decision", "") + ":" + d.value("rule", ""));
  }
  CHECK(logged == std::vector<std::string>{"c1:get_webpage:deny:web.docs_only",
                                           "c2:get_webpage:allow:web.docs_only",
                                           "c3:post_note:allow:"});
}

}  // namespace

TEST_CASE("serve: an egress call is gated and logged like a write but is no command", "[serve]") {
  const fs::path pack = MakeEgressPack();
  ServeProcess s({"--rules", pack.string()});
  RunEgress(s, "egress-memory");
  CHECK(s.Stop() == 0);
  fs::remove_all(pack);
}

TEST_CASE("serve: an egress call on a real Redis is no command either", "[serve][redis]") {
  const fs::path pack = MakeEgressPack();
  ServeProcess s({"--rules", pack.string(), "--store", testing::SharedRedisUrl(), "--tenant",
                  "serve-egress-" + std::to_string(::getpid())});
  RunEgress(s, "egress-redis");
  CHECK(s.Stop() == 0);
  fs::remove_all(pack);
}

}  // namespace taskledger::serve_test
