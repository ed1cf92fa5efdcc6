// The Redis stores on a Redis Cluster under change and faults (labels `cluster`,
// `fault`), each test on a 3+3 cluster of its own (support/redis_cluster.h):
//   - slots move (CLUSTER SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT
//     NODE) while sessions commit: every acknowledged turn is there after,
//     in order, and the writers never saw an error;
//   - kill -9 of a primary in the middle of a workload: the replica is
//     promoted and the writers (turns and command reservations) recover on
//     their own within the stores' cluster_timeout. Replication is
//     asynchronous, so what the primary had acknowledged but not yet
//     replicated can be lost: the test counts and reports it (a turn writer
//     finds out through a Conflict on its next turn), and checks that what
//     is stored is contiguous and readable.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "ledger/cluster_helpers.h"
#include "ledger/failover_writer.h"
#include "ledger/store_backends.h"
#include "support/redis_cluster.h"
#include "taskledger/commands/redis_command_store.h"
#include "taskledger/redis/keys.h"
#include "taskledger/redis/slots.h"

using namespace taskledger;
using namespace taskledger::testing;
using namespace std::chrono_literals;

namespace {

constexpr int64_t kT0 = 1'700'000'000'000;

// Reserves commands 0..count-1 in `run`, each retried after Unavailable /
// Timeout (a reservation of the same command key is idempotent). Returns
// how many were acknowledged. No Catch macro here (worker thread).
Tally Reserve(CommandStore& store, const RunId& run, uint64_t count,
              std::chrono::steady_clock::time_point deadline) {
  Tally t;
  while (t.head < count && std::chrono::steady_clock::now() < deadline) {
    CommandSpec spec;
    spec.run = run;
    spec.step = "step-" + std::to_string(t.head);
    spec.call.tool = "issue_refund";
    spec.target = "order:" + spec.step;
    spec.call.arguments = {{"order_id", spec.step}};
    auto command = NewCommand(spec, kT0);
    if (!command) break;
    auto reserved = store.Reserve(*command);
    if (reserved) {
      ++t.head;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    t.last_error = reserved.error().ToString();
    ++t.errors;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return t;
}

// Joins every thread still running when it goes out of scope.
struct JoinAll {
  std::vector<std::thread>& threads;
  ~JoinAll() {
    for (std::thread& t : threads) {
      if (t.joinable()) t.join();
    }
  }
};

// Every stored turn of `id` reads back, versions 1..head without a gap.
void CheckReadable(Store& store, const ConversationId& id) {
  auto head = store.Head(id);
  REQUIRE(head.has_value());
  auto turns = store.ReadTurns(id, 1, *head);
  INFO(id.conversation);
  REQUIRE(turns.has_value());
  REQUIRE(turns->size() == *head);
  for (uint64_t v = 1; v <= *head; ++v) CHECK((*turns)[v - 1].turn == v);
  auto state = store.ReadHead(id);
  REQUIRE(state.has_value());
  CHECK(state->version == *head);
}

}  // namespace

TEST_CASE("slots move while sessions commit: nothing lost, no error seen", "[cluster][fault]") {
  auto cluster = RedisCluster::Start();
  auto store = OpenCluster(cluster->url());
  const std::vector<int> primaries = cluster->PrimaryPorts();
  REQUIRE(primaries.size() == 3);
  const int from = primaries[0], to = primaries[1];
  auto moving = ConversationsOn(*cluster, from, "reshard", 6);
  auto staying = ConversationsOn(*cluster, to, "reshard-stay", 2);
  std::vector<ConversationId> all = moving;
  all.insert(all.end(), staying.begin(), staying.end());

  constexpr uint64_t kTurns = 150;
  std::vector<Tally> tallies(all.size());
  std::atomic<size_t> done{0};
  std::vector<std::thread> writers;
  JoinAll join_on_exit{writers};  // a failed REQUIRE must not leave them running
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (size_t i = 0; i < all.size(); ++i) {
    writers.emplace_back([&, i] {
      tallies[i] = Drive(*store, all[i], kTurns, deadline);
      ++done;
    });
  }
  // Once every writer has committed a few turns, move the slot of every
  // `moving` conversation from `from` to `to`, one slot at a time, with the
  // writers committing throughout.
  for (const ConversationId& id : all) {
    auto head_of = [&] {
      auto h = store->Head(id);
      return h ? *h : 0;
    };
    while (head_of() < 5 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(5ms);
    }
  }
  const std::string from_id = cluster->NodeId(from), to_id = cluster->NodeId(to);
  int moved = 0;
  for (const ConversationId& id : moving) {
    const std::string slot = std::to_string(internal::KeySlot(internal::TurnStreamKey(id)));
    if (cluster->PortOfSlot(std::stoi(slot)) == to) continue;  // two ids, one slot
    CHECK(cluster->Run(to, {"CLUSTER", "SETSLOT", slot, "IMPORTING", from_id}) == "OK");
    CHECK(cluster->Run(from, {"CLUSTER", "SETSLOT", slot, "MIGRATING", to_id}) == "OK");
    std::this_thread::sleep_for(30ms);  // commits land on the source, MIGRATING
    const std::string key = internal::TurnStreamKey(id);
    CHECK(cluster->Run(from, {"MIGRATE", "127.0.0.1", std::to_string(to), "", "0", "5000", "KEYS",
                              key}) == "OK");
    std::this_thread::sleep_for(30ms);  // commits are ASKed to the target
    for (int p : primaries) {
      CHECK(cluster->Run(p, {"CLUSTER", "SETSLOT", slot, "NODE", to_id}) == "OK");
    }
    ++moved;
  }
  for (std::thread& w : writers) w.join();
  REQUIRE(moved > 0);
  for (size_t i = 0; i < all.size(); ++i) {
    INFO(all[i].conversation << ": " << tallies[i].last_error);
    CHECK(tallies[i].head == kTurns);
    CHECK(tallies[i].errors == 0);
    CHECK(tallies[i].lost == 0);
    auto head = store->Head(all[i]);
    REQUIRE(head.has_value());
    CHECK(*head == kTurns);
    CheckReadable(*store, all[i]);
  }
  for (const ConversationId& id : moving) {
    CHECK(cluster->PortOfSlot(internal::KeySlot(internal::TurnStreamKey(id))) == to);
  }
}

// kill -9 of a primary while 6 turn writers and a command reserver work;
// with `replicas` > 0 the stores wait for that many replicas per write.
static void Failover(uint32_t replicas) {
  auto cluster = RedisCluster::Start();
  auto store = OpenCluster(cluster->url(), replicas);
  const std::vector<int> primaries = cluster->PrimaryPorts();
  REQUIRE(primaries.size() == 3);
  const int victim = primaries[2];
  auto on_victim = ConversationsOn(*cluster, victim, "failover", 4);
  auto elsewhere = ConversationsOn(*cluster, primaries[0], "failover-other", 2);
  std::vector<ConversationId> all = on_victim;
  all.insert(all.end(), elsewhere.begin(), elsewhere.end());

  // About 2 s of turns per writer: the failover (cluster-node-timeout 1 s,
  // then the replica's election) happens in the middle of it.
  constexpr uint64_t kTurns = 400;
  // And a run of commands on the victim (a run's keys share the slot of the
  // conversation of the same ids).
  RedisOptions ro;
  ro.url = cluster->url();
  ro.cluster_timeout = 15s;
  ro.replicas = replicas;
  auto commands = OpenRedisCommandStore(ro);
  REQUIRE(commands.has_value());
  const ConversationId run_id = ConversationsOn(*cluster, victim, "failover-cmd", 1)[0];
  const RunId run{run_id.tenant, run_id.conversation};
  constexpr uint64_t kCommands = 300;
  Tally reserved;
  std::vector<Tally> tallies(all.size());
  std::vector<std::thread> writers;
  JoinAll join_on_exit{writers};  // a failed REQUIRE must not leave them running
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + 60s;
  for (size_t i = 0; i < all.size(); ++i) {
    writers.emplace_back([&, i] { tallies[i] = Drive(*store, all[i], kTurns, deadline, 5ms); });
  }
  writers.emplace_back([&] { reserved = Reserve(**commands, run, kCommands, deadline); });
  std::this_thread::sleep_for(300ms);
  // The check below is about listing during the failover, so every writer on
  // the victim must have committed its first turn before the kill: on a
  // loaded machine (a sanitizer build beside other work) 300 ms is not always
  // enough, and a conversation not yet created is rightly not listed.
  for (auto listed = store->ListConversations("failover");
       (!listed || listed->size() < on_victim.size()) &&
       std::chrono::steady_clock::now() < deadline;
       listed = store->ListConversations("failover")) {
    std::this_thread::sleep_for(50ms);
  }
  cluster->Kill9(victim);
  // Listing scans every primary: it waits out the failover too. (A call
  // whose request was already out when the primary died is Unavailable, as
  // on a single server; the next one waits for the new primary.)
  auto listed_during = RetryWhileUnavailable([&] { return store->ListConversations("failover"); });
  INFO((listed_during ? std::string() : listed_during.error().ToString()));
  REQUIRE(listed_during.has_value());
  CHECK(listed_during->size() == on_victim.size());
  // A replica takes the victim's place. The victim is then started again
  // (as an operator would): it rejoins as the new primary's replica, which
  // writes waiting for a replica need (replicas=1 has none until then).
  while (cluster->PrimaryPorts().size() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
  }
  CHECK(cluster->PrimaryPorts().size() == 3);
  cluster->Restart(victim);
  for (std::thread& w : writers) w.join();
  const auto took = std::chrono::steady_clock::now() - start;

  uint64_t lost = 0;
  int errors = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    INFO(all[i].conversation << ": " << tallies[i].last_error);
    CHECK(tallies[i].head == kTurns);  // every writer finished: recovered by itself
    auto head = store->Head(all[i]);
    REQUIRE(head.has_value());
    CHECK(*head == kTurns);
    CheckReadable(*store, all[i]);
    lost += tallies[i].lost;
    errors += tallies[i].errors;
  }
  INFO(reserved.last_error);
  CHECK(reserved.head == kCommands);
  auto listed = (*commands)->ListCommands(run);
  REQUIRE(listed.has_value());
  const uint64_t commands_lost = kCommands - listed->size();
  // The writers on other primaries never noticed.
  for (size_t i = on_victim.size(); i < all.size(); ++i) CHECK(tallies[i].errors == 0);
  CHECK(took < 60s);
  if (replicas > 0) {  // every acknowledged write was on the promoted replica
    CHECK(lost == 0);
    CHECK(commands_lost == 0);
  }
  WARN("failover with replicas="
       << replicas << ": " << errors << " failed commits and " << reserved.errors
       << " failed reservations retried; lost to asynchronous replication: " << lost
       << " acknowledged turns, " << commands_lost << " acknowledged commands; workload took "
       << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
}

TEST_CASE("kill -9 of a primary mid-workload: writers recover on their own", "[cluster][fault]") {
  Failover(0);
}

TEST_CASE("kill -9 of a primary with replicas=1: no acknowledged turn or command is lost",
          "[cluster][fault]") {
  Failover(1);
}

TEST_CASE("a write that fewer replicas than asked confirm is Unavailable, and safe to resend",
          "[cluster]") {
  // The shared cluster has one replica per primary; a plain server has none.
  auto server = RedisServer::Start();
  // The URL form (what --store takes) sets the option as well.
  for (auto [url, replicas] :
       {std::pair{SharedRedisClusterUrl(), 2u},
        std::pair{server->url() + "?replicas=1&replica_timeout_ms=200", 0u}}) {
    INFO(url);
    auto store = OpenCluster(url, replicas);
    ConversationId id{"wait-" + std::to_string(::getpid()), "c"};
    LedgerState head;
    Status s = CommitNext(*store, id, head, {SetUpdate(Category::kFact, "k", 1)}, kT0);
    CHECK(s.code() == StatusCode::kUnavailable);
    CHECK_THAT(s.message(), Catch::Contains("replicas confirmed"));
    // The turn is on the primary: the same commit again finds it and still
    // waits; a reader sees it.
    auto stored = store->Head(id);
    REQUIRE(stored.has_value());
    CHECK(*stored == 1);
    CHECK(store->DropConversation(id).ok());
  }
  // Asking for the replicas that exist acknowledges.
  auto store = OpenCluster(SharedRedisClusterUrl(), 1);
  ConversationId id{"wait-" + std::to_string(::getpid()), "ok"};
  LedgerState head;
  CHECK(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "k", 1)}, kT0).ok());
  CHECK(store->DropConversation(id).ok());
}
