// A primary's kill -9 on a Redis Cluster that speaks only TLS to its clients
// (labels `cluster`, `fault`, `tls`): three primaries and a replica of the
// one that dies, all with tls-cluster and tls-replication, and a writer that
// commits turns over rediss+cluster:// with replicas=1 (each commit waits for
// the replica). The replica is promoted while the writer works; the writer
// recovers by itself, nothing crashes, and no acknowledged turn is lost.
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <stdexcept>
#include <thread>

#include "ledger/failover_writer.h"
#include "ledger/store_backends.h"
#include "support/redis_server.h"
#include "support/redis_tls.h"
#include "taskledger/redis/keys.h"
#include "taskledger/redis/slots.h"

using namespace taskledger;
using namespace taskledger::testing;
using namespace std::chrono_literals;

namespace {

// A node with a TLS client port, TLS on the cluster bus and for replication.
// A port that was free a moment ago may be taken by then on a shared
// machine (the TLS port or its bus port, +10000): up to three tries.
std::unique_ptr<RedisServer> StartNode(const TlsFiles& files, int& tls_port) {
  for (int attempt = 1;; ++attempt) {
    tls_port = FreeTlsPort();
    while (tls_port > 55000) tls_port = FreeTlsPort();  // the bus port is tls_port + 10000
    std::vector<std::string> args = TlsServerArgs(files, tls_port, false);
    for (const char* a : {"--cluster-enabled", "yes", "--tls-cluster", "yes", "--tls-replication",
                          "yes", "--cluster-node-timeout", "1000", "--appendonly", "no"}) {
      args.emplace_back(a);
    }
    try {
      return RedisServer::Start({.unix_socket = false, .extra_args = args});
    } catch (const std::runtime_error&) {
      if (attempt == 3) throw;
    }
  }
}

bool WaitFor(const std::function<bool()>& done, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(100ms);
  }
  return true;
}

}  // namespace

TEST_CASE("kill -9 of a primary over TLS with replicas=1: the replica takes over, nothing lost",
          "[cluster][fault][tls]") {
  const TlsFiles files = MakeTlsFiles();
  int tls[4] = {0, 0, 0, 0};
  std::vector<std::unique_ptr<RedisServer>> nodes;
  nodes.reserve(4);
  for (int i = 0; i < 4; ++i) nodes.push_back(StartNode(files, tls[i]));
  RedisServer& victim = *nodes[2];
  RedisServer& replica = *nodes[3];
  const char* ranges[3][2] = {{"0", "5460"}, {"5461", "10922"}, {"10923", "16383"}};
  for (int i = 0; i < 3; ++i) {
    REQUIRE(nodes[i]->Run({"CLUSTER", "ADDSLOTSRANGE", ranges[i][0], ranges[i][1]}) == "OK");
  }
  for (int i = 1; i < 4; ++i) {
    REQUIRE(nodes[0]->Run({"CLUSTER", "MEET", "127.0.0.1", std::to_string(tls[i])}) == "OK");
  }
  auto all_ok = [&] {
    for (auto& n : nodes) {
      if (n->running() && n->Run({"CLUSTER", "INFO"}).find("cluster_state:ok") == std::string::npos)
        return false;
    }
    return true;
  };
  REQUIRE(WaitFor(all_ok, 30s));
  const std::string victim_id = victim.Run({"CLUSTER", "MYID"});
  REQUIRE(WaitFor([&] { return replica.Run({"CLUSTER", "REPLICATE", victim_id}) == "OK"; }, 30s));
  REQUIRE(WaitFor(
      [&] {
        return replica.Run({"INFO", "replication"}).find("master_link_status:up") !=
               std::string::npos;
      },
      30s));

  RedisOptions options;
  options.url = "rediss+cluster://127.0.0.1:" + std::to_string(tls[0]) + "?ca=" + files.ca;
  options.cluster_timeout = 15s;
  options.replicas = 1;
  auto opened = OpenRedisStore(options);
  REQUIRE(opened.has_value());
  Store& store = **opened;
  // Conversations on the victim's slots (the only primary with a replica).
  std::vector<ConversationId> ids;
  for (int i = 0; ids.size() < 2; ++i) {
    ConversationId id{"tlsfail", "c" + std::to_string(i)};
    if (internal::KeySlot(internal::TurnStreamKey(id)) >= 10923) ids.push_back(id);
  }
  constexpr uint64_t kTurns = 300;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  std::vector<Tally> tallies(ids.size());
  std::vector<std::thread> writers;
  for (size_t i = 0; i < ids.size(); ++i) {
    writers.emplace_back([&, i] { tallies[i] = Drive(store, ids[i], kTurns, deadline, 5ms); });
  }
  std::this_thread::sleep_for(300ms);
  victim.Kill9();
  const bool promoted = WaitFor([&] { return replica.Run({"ROLE"}).rfind("master", 0) == 0; }, 30s);
  // The old primary comes back as the new primary's replica (replicas=1 needs one).
  victim.Restart();
  for (std::thread& w : writers) w.join();
  INFO(replica.Run({"ROLE"}));
  CHECK(promoted);
  for (size_t i = 0; i < ids.size(); ++i) {
    INFO(ids[i].conversation << ": " << tallies[i].last_error);
    CHECK(tallies[i].head == kTurns);  // recovered by itself
    CHECK(tallies[i].lost == 0);       // every acknowledged turn was on the replica
    auto head = store.Head(ids[i]);
    REQUIRE(head.has_value());
    CHECK(*head == kTurns);
    auto turns = store.ReadTurns(ids[i], 1, kTurns);
    REQUIRE(turns.has_value());
    REQUIRE(turns->size() == kTurns);
    for (uint64_t v = 1; v <= kTurns; ++v) CHECK((*turns)[v - 1].turn == v);
  }
  WARN("failover over TLS, replicas=1: " << tallies[0].errors + tallies[1].errors
                                         << " failed commits sent again");
}
