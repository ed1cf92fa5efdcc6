// RedisRouter::SendFCall / DeferredReply ("send now, read later") on a real
// redis-server and a real 3-primary cluster: the command runs before its
// reply is read; the connection holding the outstanding reply is not handed
// to anyone else until then; a connection that breaks with the reply
// outstanding is Unavailable (never a silent success, never sent twice); on
// a cluster the command reaches the primary of its slot, also after the
// slot moved (MOVED at the read: sent again there); a reply never read is
// still read (and the connection reused clean) when the object goes away.
#include <chrono>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "support/redis_cluster.h"
#include "support/redis_server.h"
#include "taskledger/redis/router.h"
#include "taskledger/redis/slots.h"

using namespace taskledger;
using namespace taskledger::internal;
using namespace taskledger::testing;

namespace {

const FunctionLibrary& SetLibrary() {
  static const FunctionLibrary library{
      "tl_deferred_test",
      "#!lua name=tl_deferred_test\n"
      "redis.register_function('tl_deferred_set', function(keys, args)\n"
      "  redis.call('SET', keys[1], args[1])\n"
      "  return redis.call('INCR', keys[1] .. ':n')\n"
      "end)\n"};
  return library;
}

std::unique_ptr<RedisRouter> OpenRouter(const std::string& url) {
  auto router = RedisRouter::Open(url, RouterOptions{});
  if (!router) FAIL("RedisRouter::Open: " << router.error().ToString());
  return std::move(router).value();
}

std::string Get(RedisRouter& router, const std::string& key) {
  auto got = router.Command(key, {"GET", key});
  REQUIRE(got.has_value());
  return got->is_nil() ? "(nil)" : got->str();
}

int64_t ClientId(RedisClient& client) {
  auto id = client.Command({"CLIENT", "ID"});
  REQUIRE(id.has_value());
  REQUIRE(id->is_integer());
  return id->integer();
}

}  // namespace

TEST_CASE("a deferred FCALL runs before its reply is read, on a connection nobody else gets",
          "[redis]") {
  auto server = RedisServer::Start();
  auto router = OpenRouter(server->url());
  const std::string key = "tl:{deferred}:a";
  // The library is missing: the read loads it and sends the call again, once.
  DeferredReply first = router->SendFCall(SetLibrary(), "tl_deferred_set", {key}, {"v1"});
  REQUIRE(first.sent());
  auto loaded = first.Wait();
  REQUIRE(loaded.has_value());
  CHECK(loaded->integer() == 1);

  // The pool hands out its most recently returned connection first: the
  // one this call takes is the one whose id is read here.
  int64_t held = 0;
  {
    auto c = router->single().Take();
    held = ClientId(*c);
  }
  DeferredReply pending = router->SendFCall(SetLibrary(), "tl_deferred_set", {key}, {"v2"});
  REQUIRE(pending.sent());
  // The server ran it while its reply waits unread in our socket.
  for (int i = 0; i < 200 && Get(*router, key) != "v2"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(Get(*router, key) == "v2");
  // The pool hands out another connection meanwhile, never the held one
  // (whose next reply is the FCALL's: the read below would get CLIENT ID's).
  {
    auto other = router->single().Take();
    CHECK(ClientId(*other) != held);
  }
  auto reply = pending.Wait();
  REQUIRE(reply.has_value());
  CHECK(reply->integer() == 2);
  auto again = pending.Wait();
  REQUIRE_FALSE(again.has_value());
  CHECK(again.error().code() == StatusCode::kFailedPrecondition);

  // Never read: the destructor reads it, so the connection goes back clean
  // (the next command on the pool gets its own reply, not this one).
  { DeferredReply dropped = router->SendFCall(SetLibrary(), "tl_deferred_set", {key}, {"v3"}); }
  auto n = router->Command(key, {"GET", key + ":n"});
  REQUIRE(n.has_value());
  CHECK(n->str() == "3");
  CHECK(Get(*router, key) == "v3");
}

TEST_CASE("a connection that breaks with the reply outstanding is Unavailable, and not resent",
          "[redis]") {
  auto server = RedisServer::Start();
  auto router = OpenRouter(server->url());
  const std::string key = "tl:{deferred}:b";
  REQUIRE(router->EnsureLoaded(SetLibrary()).ok());
  // The server holds writes (CLIENT PAUSE WRITE): the FCALL waits there, then
  // its connection is killed, so no reply ever comes and it never ran.
  REQUIRE(server->Run({"CLIENT", "PAUSE", "10000", "WRITE"}) == "OK");
  DeferredReply pending = router->SendFCall(SetLibrary(), "tl_deferred_set", {key}, {"lost"});
  REQUIRE(pending.sent());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(server->Run({"CLIENT", "KILL", "TYPE", "normal"}) != "0");
  REQUIRE(server->Run({"CLIENT", "UNPAUSE"}) == "OK");
  auto reply = pending.Wait();
  REQUIRE_FALSE(reply.has_value());
  CHECK(reply.error().code() == StatusCode::kUnavailable);
  // Not sent again behind the caller's back: the key was never written.
  CHECK(Get(*router, key) == "(nil)");
}

TEST_CASE("a deferred FCALL on a cluster reaches its slot's primary, also after the slot moved",
          "[redis][cluster]") {
  auto cluster = RedisCluster::Start();
  auto router = OpenRouter(cluster->url());
  REQUIRE(router->EnsureLoaded(SetLibrary()).ok());
  // Keys on every primary, sent together before any reply is read.
  std::vector<std::string> keys;
  std::vector<DeferredReply> pending;
  for (int i = 0; i < 12; ++i) {
    keys.push_back("tl:{deferred-" + std::to_string(i) + "}:k");
    pending.push_back(router->SendFCall(SetLibrary(), "tl_deferred_set", {keys.back()}, {"x"}));
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    auto reply = pending[i].Wait();
    REQUIRE(reply.has_value());
    CHECK(reply->integer() == 1);
    // On the node that owns the slot, asked directly.
    CHECK(cluster->Run(cluster->PortOfSlot(KeySlot(keys[i])), {"GET", keys[i]}) == "x");
  }
  // The slot of a fresh key moves to another primary behind the router's
  // back: the deferred call goes to the old owner, is MOVED, and the read
  // sends it again to the new one (nothing ran on the old).
  const std::string fresh = "tl:{deferred-moved}:k";
  const int slot = KeySlot(fresh);
  const int from = cluster->PortOfSlot(slot);
  int to = 0;
  for (int p : cluster->PrimaryPorts()) {
    if (p != from) to = p;
  }
  const std::string to_id = cluster->NodeId(to);
  for (int p : cluster->PrimaryPorts()) {
    CHECK(cluster->Run(p, {"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", to_id}) == "OK");
  }
  DeferredReply moved = router->SendFCall(SetLibrary(), "tl_deferred_set", {fresh}, {"moved"});
  REQUIRE(moved.sent());
  auto reply = moved.Wait();
  REQUIRE(reply.has_value());
  CHECK(reply->integer() == 1);
  CHECK(cluster->Run(to, {"GET", fresh}) == "moved");
  CHECK(cluster->Run(to, {"GET", fresh + ":n"}) == "1");
}
