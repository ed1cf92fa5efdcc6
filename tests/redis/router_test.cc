// The Redis connection layer's cluster routing: key slots against the
// server's own CLUSTER KEYSLOT answers, cluster URLs, and the router on a
// real 3-primary cluster: redirects after a slot moved (MOVED, and ASK in
// the middle of a migration), a function library missing on one primary, a
// slot no node serves (a clear Unavailable, quickly), and a plain redis://
// URL that points at a cluster node.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "support/redis_cluster.h"
#include "support/redis_server.h"
#include "taskledger/redis/keys.h"
#include "taskledger/redis/router.h"
#include "taskledger/redis/slots.h"

using namespace taskledger;
using namespace taskledger::internal;
using namespace taskledger::testing;

namespace {

const FunctionLibrary& EchoLibrary() {
  static const FunctionLibrary library{
      "tl_router_test",
      "#!lua name=tl_router_test\n"
      "redis.register_function('tl_router_echo', function(keys, args)\n"
      "  redis.call('SET', keys[1], args[1])\n"
      "  return redis.call('GET', keys[1])\n"
      "end)\n"};
  return library;
}

std::unique_ptr<RedisRouter> OpenRouter(
    const std::string& url,
    std::chrono::milliseconds cluster_timeout = std::chrono::milliseconds(5000)) {
  RouterOptions options;
  options.cluster_timeout = cluster_timeout;
  auto router = RedisRouter::Open(url, options);
  if (!router) FAIL("RedisRouter::Open: " << router.error().ToString());
  return std::move(router).value();
}

}  // namespace

TEST_CASE("key slots are CRC16 of the hash tag, as CLUSTER KEYSLOT answers", "[redis][cluster]") {
  CHECK(Crc16("123456789") == 0x31C3);
  // Answers of a Redis 7.0 node's CLUSTER KEYSLOT.
  CHECK(KeySlot("123456789") == 12739);
  CHECK(KeySlot("foo") == 12182);
  CHECK(KeySlot("bar") == 5061);
  CHECK(KeySlot("somekey") == 11058);
  CHECK(KeySlot("foo{hash_tag}") == 2515);
  CHECK(KeySlot("bar{hash_tag}") == 2515);
  CHECK(KeySlot("{user1000}.following") == 3443);
  CHECK(KeySlot("foo{}{bar}") == 8363);  // an empty tag: the whole key
  CHECK(KeySlot("foo{{bar}}zap") == 4015);
  CHECK(KeySlot("foo{bar}{zap}") == 5061);  // the first tag only
  CHECK(KeySlot("tl:{acme:c1}:turns") == 15837);
  CHECK(KeySlot("tl:{acme:") == 3257);  // unclosed: the whole key
  CHECK(KeySlot("{}") == 15257);
  CHECK(KeySlot("") == 0);
}

TEST_CASE("a cluster's \"nothing ran here\" replies are read one way, every other is an answer",
          "[redis][cluster]") {
  CHECK(ClassifyClusterReply(Reply::Error("MOVED 3999 127.0.0.1:6381")) == ClusterReply::kMoved);
  CHECK(ClassifyClusterReply(Reply::Error("ASK 3999 127.0.0.1:6381")) == ClusterReply::kAsk);
  CHECK(ClassifyClusterReply(Reply::Error("TRYAGAIN Multiple keys request during rehashing")) ==
        ClusterReply::kBusy);
  CHECK(ClassifyClusterReply(Reply::Error("CLUSTERDOWN The cluster is down")) ==
        ClusterReply::kBusy);
  // The command's own answers, errors included: never sent again.
  CHECK(ClassifyClusterReply(Reply::Error("ERR Function not found")) == ClusterReply::kRan);
  CHECK(ClassifyClusterReply(Reply::Error("TLFENCED fenced: token 1 is stale")) ==
        ClusterReply::kRan);
  CHECK(ClassifyClusterReply(Reply::Error("MOVEDX 1 a:1")) == ClusterReply::kRan);
  CHECK(ClassifyClusterReply(Reply::String("MOVED 3999 127.0.0.1:6381")) == ClusterReply::kRan);
  CHECK(ClassifyClusterReply(Reply::StatusText("ASK 1 a:1")) == ClusterReply::kRan);
  CHECK(ClassifyClusterReply(Reply::Integer(1)) == ClusterReply::kRan);
}

TEST_CASE("cluster URLs name seeds that share credentials", "[redis][cluster]") {
  auto seeds = ParseClusterUrl("redis+cluster://u:p%40ss@10.0.0.1:7000,10.0.0.2,[::1]:7002");
  REQUIRE(seeds.has_value());
  REQUIRE(seeds->size() == 3);
  CHECK((*seeds)[0].host == "10.0.0.1");
  CHECK((*seeds)[0].port == 7000);
  CHECK((*seeds)[1].port == 6379);
  CHECK((*seeds)[2].host == "::1");
  for (const RedisEndpoint& s : *seeds) {
    CHECK(s.user == "u");
    CHECK(s.password == "p@ss");
  }
  for (const char* bad : {"redis+cluster://", "redis+cluster://h:1,,h:2", "redis+cluster://h:1/2",
                          "redis+cluster://h:99999", "redis://h:1,h:2"}) {
    INFO(bad);
    auto r = std::string_view(bad).starts_with("redis+") ? ParseClusterUrl(bad).status()
                                                         : ParseRedisUrl(bad).status();
    CHECK(r.code() == StatusCode::kInvalidArgument);
  }
  CHECK(ParseRedisUrl("redis+cluster://h:1").status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("a URL's ?replicas= and ?replica_timeout_ms= set the durability options",
          "[redis][cluster]") {
  uint32_t replicas = 0;
  std::chrono::milliseconds timeout(500);
  std::string url = "redis+cluster://u:p?x@h:1,h:2?replicas=1&replica_timeout_ms=250";
  REQUIRE(TakeDurabilityQuery(url, replicas, timeout).ok());
  CHECK(url == "redis+cluster://u:p?x@h:1,h:2");  // a '?' in the password is not a query
  CHECK(replicas == 1);
  CHECK(timeout == std::chrono::milliseconds(250));
  std::string plain = "redis://h:1/2?replicas=2";
  REQUIRE(TakeDurabilityQuery(plain, replicas, timeout).ok());
  CHECK(plain == "redis://h:1/2");
  CHECK(replicas == 2);
  CHECK(timeout == std::chrono::milliseconds(250));  // not named: unchanged
  std::string socket = "unix:///tmp/r.sock?db=2";
  REQUIRE(TakeDurabilityQuery(socket, replicas, timeout).ok());
  CHECK(socket == "unix:///tmp/r.sock?db=2");
  for (std::string bad : {"redis://h?replicas=x", "redis://h?replica=1", "redis://h?replicas",
                          "redis://h?replicas=-1"}) {
    INFO(bad);
    CHECK(TakeDurabilityQuery(bad, replicas, timeout).code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("every key goes to the primary of its slot, from any seed", "[redis][cluster]") {
  std::string url = SharedRedisClusterUrl();
  auto router = OpenRouter(url);
  REQUIRE(router->cluster());
  CHECK(router->primaries() == 3);
  // Keys on every primary: written through the router, read back, and each
  // found on the node CLUSTER KEYSLOT's owner names (the router never got
  // a redirect it could not follow).
  for (int i = 0; i < 60; ++i) {
    std::string key =
        TurnStreamKey({"router-test-" + std::to_string(::getpid()), "c" + std::to_string(i)});
    auto set = router->Command(key, {"SET", key, std::to_string(i)});
    REQUIRE(set.has_value());
    CHECK(set->str() == "OK");
    auto get = router->Command(key, {"GET", key});
    REQUIRE(get.has_value());
    CHECK(get->str() == std::to_string(i));
    REQUIRE(router->Command(key, {"DEL", key}).has_value());
  }
  // A plain redis:// URL that points at a cluster node is a cluster too.
  auto comma = url.find(',');
  std::string one = "redis://" + url.substr(16, comma - 16);
  auto plain = OpenRouter(one);
  CHECK(plain->cluster());
  CHECK(plain->primaries() == 3);
}

TEST_CASE("a plain Redis stays a single server", "[redis]") {
  auto router = OpenRouter(SharedRedisUrl());
  CHECK_FALSE(router->cluster());
  CHECK(router->primaries() == 1);
}

TEST_CASE("a slot that moved is followed (MOVED, ASK), and a missing library is loaded",
          "[redis][cluster]") {
  auto cluster = RedisCluster::Start();
  auto router = OpenRouter(cluster->url());
  const std::string key = "tl:{router-move}:k";
  const int slot = KeySlot(key);
  REQUIRE(router->Command(key, {"SET", key, "before"}).has_value());
  const int from = cluster->PortOfSlot(slot);
  int to = 0;
  for (int p : cluster->PrimaryPorts()) {
    if (p != from) to = p;
  }
  const std::string from_id = cluster->NodeId(from), to_id = cluster->NodeId(to);
  const std::string s = std::to_string(slot);

  // Mid-migration: the key still on the source answers there; a new key of
  // the slot is ASKed to the target (ASKING + the command).
  CHECK(cluster->Run(to, {"CLUSTER", "SETSLOT", s, "IMPORTING", from_id}) == "OK");
  CHECK(cluster->Run(from, {"CLUSTER", "SETSLOT", s, "MIGRATING", to_id}) == "OK");
  const std::string fresh = "tl:{router-move}:fresh";
  auto asked = router->Command(fresh, {"SET", fresh, "asked"});
  REQUIRE(asked.has_value());
  CHECK(asked->str() == "OK");
  // The key moves; the slot is handed over on every primary.
  CHECK(cluster->Run(from, {"MIGRATE", "127.0.0.1", std::to_string(to), "", "0", "5000", "KEYS",
                            key}) == "OK");
  for (int p : cluster->PrimaryPorts()) {
    CHECK(cluster->Run(p, {"CLUSTER", "SETSLOT", s, "NODE", to_id}) == "OK");
  }
  // The router's map still says `from`: MOVED, map refreshed, and read there.
  auto after = router->Command(key, {"GET", key});
  REQUIRE(after.has_value());
  CHECK(after->str() == "before");
  auto fresh_read = router->Command(fresh, {"GET", fresh});
  REQUIRE(fresh_read.has_value());
  CHECK(fresh_read->str() == "asked");
  CHECK(cluster->PortOfSlot(slot) == to);

  // The library is loaded on every primary; a node that lost it (FUNCTION
  // FLUSH) gets it again on its first "function not found".
  REQUIRE(router->EnsureLoaded(EchoLibrary()).ok());
  for (int p : cluster->PrimaryPorts()) {
    CHECK(cluster->Run(p, {"FUNCTION", "LIST", "LIBRARYNAME", "tl_router_test"})
              .find("tl_router_test") != std::string::npos);
  }
  CHECK(cluster->Run(to, {"FUNCTION", "FLUSH"}) == "OK");
  auto echoed = router->FCall(EchoLibrary(), "tl_router_echo", {key}, {"again"});
  REQUIRE(echoed.has_value());
  CHECK(echoed->str() == "again");
}

// A map read mid-failover lacks the failed primary's slots for a moment, so a
// slot with no owner is waited for like TRYAGAIN: the call ends Unavailable
// when its cluster_timeout is up, never later.
TEST_CASE("a slot no node serves is Unavailable when the call's time is up, never a hang",
          "[redis][cluster]") {
  auto cluster = RedisCluster::Start();
  const std::string key = "tl:{router-uncovered}:k";
  const int slot = KeySlot(key);
  // Every node forgets who serves the slot (and stops requiring full
  // coverage, so the other slots keep working).
  for (int p : cluster->ports()) {
    cluster->Run(p, {"CONFIG", "SET", "cluster-require-full-coverage", "no"});
  }
  for (int p : cluster->ports()) cluster->Run(p, {"CLUSTER", "DELSLOTS", std::to_string(slot)});
  auto router = OpenRouter(cluster->url(), std::chrono::milliseconds(800));
  auto start = std::chrono::steady_clock::now();
  auto reply = router->Command(key, {"GET", key});
  auto took = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(reply.has_value());
  CHECK(reply.error().code() == StatusCode::kUnavailable);
  CHECK(reply.error().message().find("slot " + std::to_string(slot)) != std::string::npos);
  CHECK(took >= std::chrono::milliseconds(800));
  CHECK(took < std::chrono::milliseconds(800 + 1500));
  // Other slots still answer.
  const std::string other = "tl:{router-covered}:k";
  REQUIRE(KeySlot(other) != slot);
  CHECK(router->Command(other, {"SET", other, "1"}).has_value());
}

// A test binary that crashes never runs ~RedisCluster: the next cluster a
// harness starts stops the nodes of clusters whose owner process is gone.
TEST_CASE("a cluster left by a crashed test process is stopped by the next start",
          "[redis][cluster]") {
  int ports[1] = {0};
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(fds[0]);
    int port = 0;
    try {
      auto orphan = RedisCluster::Start();
      port = orphan->PrimaryPorts().front();
      (void)orphan.release();  // as a crash: never stopped
    } catch (...) {
    }
    if (::write(fds[1], &port, sizeof(port)) != sizeof(port)) ::_exit(2);
    ::_exit(0);  // no destructor: as a crash
  }
  ::close(fds[1]);
  REQUIRE(::read(fds[0], &ports[0], sizeof(int)) == sizeof(int));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(ports[0] != 0);
  // The orphan's node process (its port may be reused once it is gone).
  const std::string info = RunRedisCommand(ports[0], {"INFO", "server"});
  const size_t at = info.find("process_id:");
  REQUIRE(at != std::string::npos);
  const pid_t node = static_cast<pid_t>(std::stol(info.substr(at + 11)));
  REQUIRE(::kill(node, 0) == 0);
  auto next = RedisCluster::Start();
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = ::kill(node, 0) != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(gone);
  CHECK(RunRedisCommand(next->PrimaryPorts().front(), {"PING"}) == "PONG");
}
