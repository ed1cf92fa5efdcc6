// A stranger on a failed primary's address (labels `cluster`, `fault`): a
// primary is killed and a plain redis-server, no node of the cluster, starts
// on its port before the replica has taken its slots. The router must not
// take that server for the primary: a listing waits for the failover instead
// of scanning the stranger's empty keyspace (it would silently leave out the
// victim's conversations), and a commit lands on the promoted replica, never
// on the stranger (which would accept it). Each test on a 3+3 cluster of its
// own.
#include <catch2/catch.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>

#include "ledger/cluster_helpers.h"
#include "support/redis_cluster.h"

using namespace taskledger;
using namespace taskledger::testing;
using namespace std::chrono_literals;

namespace {

constexpr int64_t kT0 = 1'700'000'000'000;

// A plain (non-cluster) redis-server on `port`, killed when it goes out of
// scope: a stranger on the address a failed primary had.
struct Stranger {
  pid_t pid = 0;
  explicit Stranger(int port) {
    std::string p = std::to_string(port);
    std::vector<std::string> args = {"redis-server", "--port", p,     "--bind",
                                     "127.0.0.1",    "--save", "",    "--appendonly",
                                     "no",           "--dir",  "/tmp"};
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawnp(&pid, "redis-server", nullptr, nullptr, argv.data(), environ) != 0) pid = 0;
  }
  ~Stranger() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

// Kills the primary on `victim` and starts a Stranger there, answering PING.
std::unique_ptr<Stranger> ReplaceWithStranger(RedisCluster& cluster, int victim) {
  cluster.Kill9(victim);
  auto stranger = std::make_unique<Stranger>(victim);
  REQUIRE(stranger->pid > 0);
  for (int i = 0; i < 100; ++i) {
    try {
      if (cluster.Run(victim, {"PING"}) == "PONG") return stranger;
    } catch (const std::exception&) {  // not listening yet
    }
    std::this_thread::sleep_for(20ms);
  }
  FAIL("no stranger answers on port " << victim);
  return nullptr;
}

}  // namespace

TEST_CASE("a listing never scans a stranger on a failed primary's port", "[cluster][fault]") {
  auto cluster = RedisCluster::Start();
  auto store = OpenCluster(cluster->url());
  // The primary of slot 0: the slot map is read from it first (Refresh), so
  // a connection to the stranger is opened there before any is confirmed.
  const int victim = cluster->PortOfSlot(0);
  auto ids = ConversationsOn(*cluster, victim, "stranger", 3);
  for (const ConversationId& id : ids) {
    LedgerState head;
    REQUIRE(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "k", 1)}, kT0).ok());
  }
  auto before = store->ListConversations("stranger");
  REQUIRE(before.has_value());
  REQUIRE(before->size() == ids.size());
  // The address answers again at once, but as an empty server that is no
  // node of the cluster, until the replica has taken the victim's slots.
  auto stranger = ReplaceWithStranger(*cluster, victim);
  auto during = RetryWhileUnavailable([&] { return store->ListConversations("stranger"); });
  INFO((during ? std::string() : during.error().ToString()));
  REQUIRE(during.has_value());
  CHECK(during->size() == ids.size());  // the stranger's empty SCAN would give 0
  CHECK(cluster->PortOfSlot(internal::KeySlot(internal::TurnStreamKey(ids[0]))) != victim);
}

TEST_CASE("a commit never lands on a stranger on a failed primary's port", "[cluster][fault]") {
  auto cluster = RedisCluster::Start();
  auto store = OpenCluster(cluster->url());
  // The primary of slot 0: the slot map is read from it first (Refresh), so
  // a connection to the stranger is opened there before any is confirmed.
  const int victim = cluster->PortOfSlot(0);
  const ConversationId id = ConversationsOn(*cluster, victim, "stranger-write", 1)[0];
  LedgerState head;
  REQUIRE(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "k", 1)}, kT0).ok());
  auto stranger = ReplaceWithStranger(*cluster, victim);
  // The pooled connection died with the victim: the next one reaches the
  // stranger, which would take the write (and load the functions) if asked.
  Status s = RetryWhileUnavailable(
      [&] { return CommitNext(*store, id, head, {SetUpdate(Category::kFact, "k", 2)}, kT0); });
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(cluster->Run(victim, {"DBSIZE"}) == "0");
  auto stored = store->Head(id);
  REQUIRE(stored.has_value());
  CHECK(*stored == 2);
}
