// `taskledger serve --tokens FILE` through the real binary: a token reaches
// only its tenant, approvals need an operator token, a missing or unknown
// token is 401 with nothing written, and the access log never holds a token.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "serve_process.h"
#include "taskledger/base/digest.h"

namespace taskledger::serve_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* kAlice = "alice-token-0123456789";
const char* kBob = "bob-token-9876543210";
const char* kOps = "operator-token-abcdef";

std::string TokenFile() {
  fs::path p = fs::temp_directory_path() / ("tl-serve-tokens-" + std::to_string(::getpid()));
  std::ofstream out(p);
  out << "# tenant sha256 [operator]\n"
      << "acme " << Sha256Hex(kAlice) << "\n"
      << "globex " << Sha256Hex(kBob) << "\n"
      << "acme " << Sha256Hex(kOps) << " operator\n";
  return p.string();
}

}  // namespace

TEST_CASE("serve: tokens decide the tenant and the operator role", "[serve]") {
  const std::string tokens = TokenFile();
  ServeProcess s({"--rules", std::string(TASKLEDGER_SOURCE_DIR) + "/rules/subscription", "--tokens",
                  tokens, "--access-log"});
  CHECK(s.listening_line().find("no tokens") == std::string::npos);
  const json refund = {{"conversation", "shared-name"},
                       {"call",
                        {{"id", "r1"},
                         {"tool", "refund_subscription"},
                         {"arguments", {{"id", "S9"}, {"amount", 5}}}}}};

  Reply none = s.Post("/v1/propose", refund);
  CHECK(none.status == 401);
  CHECK(none.body["error"]["code"] == "unauthenticated");
  CHECK(s.Post("/v1/propose", refund, "not-a-token").status == 401);
  CHECK(s.Send("GET", "/healthz", "").status == 200);  // health needs no token

  const json verify = {{"id", "v1"}, {"tool", "verify_identity"}};
  REQUIRE(
      s.Post("/v1/propose", {{"conversation", "shared-name"}, {"call", verify}}, kAlice).status ==
      200);
  REQUIRE(
      s.Post("/v1/outcome",
             {{"conversation", "shared-name"}, {"call", verify}, {"output", {{"verified", true}}}},
             kAlice)
          .status == 200);
  Reply held = s.Post("/v1/propose", refund, kAlice);
  REQUIRE(held.status == 200);
  REQUIRE(held.body["command"]["state"] == "blocked");
  const std::string key = held.body["command"]["command_key"];

  // Bob's tenant has its own conversation of that name: empty, no commands.
  Reply bob = s.Post("/v1/versions", {{"conversation", "shared-name"}}, kBob);
  REQUIRE(bob.status == 200);
  CHECK(bob.body["head"] == 0);
  Reply bob_cmds = s.Post("/v1/commands/list", {{"conversation", "shared-name"}}, kBob);
  REQUIRE(bob_cmds.status == 200);
  CHECK(bob_cmds.body["commands"].empty());
  Reply alice_cmds = s.Post("/v1/commands/list", {{"conversation", "shared-name"}}, kAlice);
  REQUIRE(alice_cmds.status == 200);
  CHECK(alice_cmds.body["commands"].size() == 1);

  const json approve = {{"conversation", "shared-name"}, {"command_key", key}, {"reason", "ok"}};
  Reply by_user = s.Post("/v1/commands/approve", approve, kAlice);
  CHECK(by_user.status == 403);
  CHECK(s.Post("/v1/commands/list", {{"conversation", "shared-name"}, {"state", "blocked"}}, kAlice)
            .body["commands"]
            .size() == 1);
  Reply by_ops = s.Post("/v1/commands/approve", approve, kOps);
  REQUIRE(by_ops.status == 200);
  CHECK(by_ops.body["command"]["state"] == "approved");

  CHECK(s.Stop() == 0);
  const std::string log = s.Stderr();
  CHECK(log.find("access 127.0.0.1 POST /v1/commands/approve 403") != std::string::npos);
  for (const char* t : {kAlice, kBob, kOps}) CHECK(log.find(t) == std::string::npos);
  fs::remove(tokens);
}

TEST_CASE("serve: a malformed token file is refused at start", "[serve]") {
  fs::path p = fs::temp_directory_path() / ("tl-serve-badtokens-" + std::to_string(::getpid()));
  {
    std::ofstream out(p);
    out << "acme not-a-digest\n";
  }
  std::string err;
  CHECK(RunServeToExit({"--tokens", p.string()}, err) == 2);
  CHECK(err.find("TENANT SHA256HEX") != std::string::npos);
  fs::remove(p);
}

}  // namespace taskledger::serve_test
