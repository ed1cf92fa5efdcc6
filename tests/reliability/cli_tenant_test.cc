// Tenant isolation through the taskledger CLI: `taskledger audit` run with
// one tenant's Redis ACL user, or with crafted tenant and conversation ids,
// shows nothing of another tenant's conversations (docs/reliability.md).
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "reliability/workload.h"
#include "support/redis_server.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

struct CliRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

std::string Quote(const std::string& arg) {
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

CliRun RunCli(const std::vector<std::string>& args) {
  std::string cmd = TASKLEDGER_CLI;
  for (const std::string& a : args) cmd += " " + Quote(a);
  cmd += " 2>&1";
  CliRun run;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return run;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) run.output.append(buf, n);
  int status = pclose(p);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

}  // namespace

TEST_CASE("tenant isolation: the CLI shows one tenant nothing of another",
          "[reliability][tenant][cli]") {
  auto server = RedisServer::Start();
  auto admin = MustOpenStore(server->url());
  {
    auto session = Session::Open(*admin, {"victim", "c1"}, RetailPack());
    REQUIRE(session.has_value());
    REQUIRE(StageWorkloadTurn(*session.value(), 1).ok());
    REQUIRE(session.value()->EndTurn().has_value());
  }
  REQUIRE(server->Run({"ACL", "SETUSER", "mallory", "on", ">pw-m", "resetkeys", "~tl:{mallory:*",
                       "resetchannels", "-@all", "+ping", "+fcall", "+fcall_ro", "+function|list",
                       "+hget", "+xrange", "+xrevrange", "+del", "+scan", "+exists"}) == "OK");
  const std::string mallory = "redis://mallory:pw-m@127.0.0.1:" + std::to_string(server->port());
  const std::string secret = StatusKeyOf(1);  // a fact only the victim's conversation holds

  SECTION("the admin sees the victim's conversation (so the probes below can fail)") {
    CliRun shown = RunCli({"audit", "show", "c1", "--store", server->url(), "--tenant", "victim"});
    CHECK(shown.exit_code == 0);
    CHECK(shown.output.find(secret) != std::string::npos);
  }
  SECTION("another tenant's ACL user is refused with a clear error") {
    CliRun shown = RunCli({"audit", "show", "c1", "--store", mallory, "--tenant", "victim"});
    CHECK(shown.exit_code == 2);
    CHECK(shown.output.find("NOPERM") != std::string::npos);
    CHECK(shown.output.find(secret) == std::string::npos);
    CliRun listed = RunCli({"audit", "list", "--store", mallory, "--tenant", "victim"});
    CHECK(listed.output.find("c1") == std::string::npos);
  }
  SECTION("crafted ids reach only their own (empty) namespace") {
    const std::vector<std::pair<std::string, std::string>> crafted = {
        {"mallory", "}:{victim:c1"}, {"mallory", "../victim/c1"}, {"mallory", "*"},
        {"victim}", "c1"},           {"victim:c1", "x"},          {"*", "*"}};
    for (const auto& [tenant, conversation] : crafted) {
      INFO("tenant='" << tenant << "' conversation='" << conversation << "'");
      for (const std::string& url : {server->url(), mallory}) {
        CliRun shown = RunCli({"audit", "show", conversation, "--store", url, "--tenant", tenant});
        CHECK(shown.output.find(secret) == std::string::npos);
        if (tenant.find("c1") != std::string::npos) continue;  // the listing may echo its tenant
        CliRun listed = RunCli({"audit", "list", "--store", url, "--tenant", tenant});
        CHECK(listed.output.find("c1") == std::string::npos);
      }
    }
  }
  CHECK(admin->Head({"victim", "c1"}).value() == 1);
}
