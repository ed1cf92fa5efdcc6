// The CLI on a Redis Cluster (support/redis_cluster.h): a replay of several
// conversations with --store redis+cluster://… (spread over every primary),
// read back by `audit list` in another process, through the cluster URL and
// through a plain redis:// URL naming one node (auto-detected); and the
// `commands` verbs over a command the test reserved on the cluster; and a
// tenant's ACL user (the rules docs/redis-keys.md gives, on every primary).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <set>
#include <string>

#include "cli/cli_runner.h"
#include "cli/cli_seed.h"
#include "support/redis_cluster.h"
#include "support/redis_server.h"
#include "support/tenant_acl.h"
#include "taskledger/commands/redis_command_store.h"
#include "taskledger/ledger/redis_store.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

std::string Pack() {
  static const std::string dir = WriteShopPack(TempDir() + "/cluster-shop");
  return dir;
}

// "redis://127.0.0.1:P" for the first seed of a redis+cluster:// URL.
std::string FirstNode(const std::string& cluster_url) {
  std::string nodes = cluster_url.substr(std::string("redis+cluster://").size());
  return "redis://" + nodes.substr(0, nodes.find(','));
}

}  // namespace

TEST_CASE("replay and audit run unchanged on a Redis Cluster", "[redis][cluster]") {
  const std::string url = SharedRedisClusterUrl();
  const std::string tenant = "cli-cluster-" + std::to_string(::getpid());
  const std::string trace = TempDir() + "/" + tenant + ".jsonl";
  std::string lines;
  for (int i = 0; i < 12; ++i) lines += ShopTraceLine("conv-" + std::to_string(i)) + "\n";
  WriteFile(trace, lines);
  CliRun r = RunCli({"replay", trace, "--rules", Pack(), "--store", url, "--tenant", tenant,
                     "--prefix", "", "--json", "-q"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.LastJson()["conversations"] == 12);
  CHECK(r.LastJson()["mismatches"].empty());

  for (const std::string& store : {url, FirstNode(url)}) {
    CliRun list = RunCli({"audit", "list", "--json", "--store", store, "--tenant", tenant});
    INFO(store << "\n" << list.out << list.err);
    REQUIRE(list.exit_code == 0);
    std::set<std::string> names;
    const nlohmann::json listed = list.LastJson();
    for (const auto& c : listed["conversations"]) {
      names.insert(c["conversation"].get<std::string>());
      CHECK(c["version"] == 4);
    }
    CHECK(names.size() == 12);
  }

  auto opened = OpenStore(url);
  REQUIRE(opened.has_value());
  for (int i = 0; i < 12; ++i) {
    CHECK((*opened)->DropConversation({tenant, "conv-" + std::to_string(i)}).ok());
  }
}

TEST_CASE("the commands verbs work on a Redis Cluster", "[redis][cluster]") {
  const std::string url = SharedRedisClusterUrl();
  const std::string tenant = "cli-cluster-cmd-" + std::to_string(::getpid());
  const SeededCommand seeded = SeedBlockedRefund(url, tenant);
  const CommandSpec& spec = seeded.spec;
  const std::string& key = seeded.key;
  auto with = [&](std::vector<std::string> args) { return RunCliOn(std::move(args), url, tenant); };
  CliRun blocked = with({"commands", "list", "--state", "blocked", "--json"});
  INFO(blocked.out << blocked.err);
  REQUIRE(blocked.exit_code == 0);
  REQUIRE(blocked.LastJson()["commands"].size() == 1);
  CliRun approve = with({"commands", "approve", "run-1", key, "--reason", "refund within policy",
                         "--actor", "alice"});
  INFO(approve.out << approve.err);
  CHECK(approve.exit_code == 0);
  auto after = seeded.store->Get(spec.run, key);
  REQUIRE(after.has_value());
  CHECK(after->state == CommandState::kApproved);
  CHECK(after->approver == "alice");
  CHECK(seeded.store->DropRun(spec.run).ok());
}

TEST_CASE("a tenant's ACL user replays on the cluster and cannot list another tenant",
          "[redis][cluster]") {
  const std::string url = SharedRedisClusterUrl();
  const std::string tenant = "aclc" + std::to_string(::getpid());
  // The libraries are loaded by an administrative user (any store open).
  REQUIRE(OpenStore(url).has_value());
  RedisOptions admin;
  admin.url = url;
  REQUIRE(OpenRedisCommandStore(admin).has_value());
  const std::string nodes = url.substr(std::string("redis+cluster://").size());
  for (size_t at = 0; at != std::string::npos;) {
    size_t comma = nodes.find(',', at);
    std::string node = nodes.substr(at, comma == std::string::npos ? comma : comma - at);
    int port = std::stoi(node.substr(node.find(':') + 1));
    // The documented tenant ACL (tests/support/tenant_acl.h) plus the router's rules.
    std::string set = RunRedisCommand(
        port, TenantAclSetUser(tenant, "pw-" + tenant, {"+cluster|slots", "+asking"}));
    REQUIRE(set == "OK");
    at = comma == std::string::npos ? comma : comma + 1;
  }
  const std::string user_url = "redis+cluster://" + tenant + ":pw-" + tenant + "@" + nodes;
  const std::string trace = TempDir() + "/" + tenant + ".jsonl";
  std::string lines;
  for (int i = 0; i < 6; ++i) lines += ShopTraceLine("conv-" + std::to_string(i)) + "\n";
  WriteFile(trace, lines);
  CliRun r = RunCli({"replay", trace, "--rules", Pack(), "--store", user_url, "--tenant", tenant,
                     "--prefix", "", "--json", "-q"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CliRun list = RunCli({"audit", "list", "--json", "--store", user_url, "--tenant", tenant});
  INFO(list.out << list.err);
  REQUIRE(list.exit_code == 0);
  CHECK(list.LastJson()["conversations"].size() == 6);
  CliRun other = RunCli({"audit", "list", "--json", "--store", user_url, "--tenant", "someone"});
  CHECK(other.exit_code != 0);
  CHECK_THAT(other.err, Catch::Contains("NOPERM"));
  auto opened = OpenStore(url);
  REQUIRE(opened.has_value());
  for (int i = 0; i < 6; ++i) {
    CHECK((*opened)->DropConversation({tenant, "conv-" + std::to_string(i)}).ok());
  }
}
