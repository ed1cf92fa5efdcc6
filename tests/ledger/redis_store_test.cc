// RedisStore specifics against a real redis-server: URL parsing, unix socket
// and ACL-user URLs, the per-tenant ACL from docs/redis-keys.md, the key
// layout (hash tags, snapshots every K turns, one TTL for every key),
// idempotent retried commits, and reloading a flushed function library.
#include <catch2/catch.hpp>

#include "internal/redis_client.h"
#include "internal/redis_keys.h"
#include "ledger/store_backends.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

constexpr int64_t kT0 = 1'700'000'000'000;

std::unique_ptr<Store> OpenOn(const std::string& url, StoreOptions options = {}) {
  RedisOptions r;
  r.url = url;
  r.store = options;
  auto store = OpenRedisStore(r);
  if (!store) FAIL("OpenRedisStore(" << url << "): " << store.error().ToString());
  return std::move(store.value());
}

}  // namespace

TEST_CASE("redis url: accepted forms and clear errors", "[redis]") {
  using internal::ParseRedisUrl;
  auto plain = ParseRedisUrl("redis://127.0.0.1:6380").value();
  CHECK(plain.host == "127.0.0.1");
  CHECK(plain.port == 6380);
  CHECK(plain.db == 0);
  auto full = ParseRedisUrl("redis://acme:p%40ss@localhost:7000/3").value();
  CHECK(full.user == "acme");
  CHECK(full.password == "p@ss");
  CHECK(full.db == 3);
  auto default_user = ParseRedisUrl("redis://:secret@h").value();
  CHECK(default_user.user.empty());
  CHECK(default_user.password == "secret");
  CHECK(default_user.port == 6379);
  auto v6 = ParseRedisUrl("redis://[::1]:6390").value();
  CHECK(v6.host == "::1");
  CHECK(v6.port == 6390);
  auto unix_url = ParseRedisUrl("unix:///tmp/r.sock?db=2").value();
  CHECK(unix_url.unix_socket);
  CHECK(unix_url.socket_path == "/tmp/r.sock");
  CHECK(unix_url.db == 2);

  for (const char* bad : {"http://h:1", "redis://", "redis://h:0", "redis://h:70000", "redis://h:x",
                          "redis://h:1/db", "redis://user@h", "redis://u:%zz@h", "unix://relative.sock",
                          "unix:///s?timeout=1", "rediss://h:1", "redis://[::1"}) {
    INFO(bad);
    auto r = ParseRedisUrl(bad);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code() == StatusCode::kInvalidArgument);
    CHECK_FALSE(r.error().message().empty());
  }
  auto opened = OpenStore("redis://h:notaport");
  REQUIRE_FALSE(opened.has_value());
  CHECK(opened.error().code() == StatusCode::kInvalidArgument);
  CHECK(OpenStore("memory").has_value());
}

TEST_CASE("redis keys: ids are percent-encoded inside one hash tag", "[redis]") {
  CHECK(internal::PercentEncodeKeyPart("acme-1.x_y") == "acme-1.x_y");
  CHECK(internal::PercentEncodeKeyPart("a}:x") == "a%7D%3Ax");
  CHECK(internal::PercentEncodeKeyPart("{*\n") == "%7B%2A%0A");
  CHECK(internal::PercentDecodeKeyPart("a%7D%3Ax").value() == "a}:x");
  CHECK_FALSE(internal::PercentDecodeKeyPart("a%7").has_value());
  auto keys = internal::LedgerKeysFor({"a}:x", "{c}"});
  CHECK(keys.head == "tl:{a%7D%3Ax:%7Bc%7D}:head");
  CHECK(keys.turns == "tl:{a%7D%3Ax:%7Bc%7D}:turns");
  CHECK(internal::TenantHeadPattern("a*") == "tl:{a%2A:*}:head");
}

TEST_CASE("redis: unix socket URL, ACL user URL, and a per-tenant ACL", "[redis]") {
  auto server = RedisServer::Start(RedisServerOptions{true, {}});
  LedgerState head;
  auto via_socket = OpenOn(server->unix_url());
  REQUIRE(CommitNext(*via_socket, {"acme", "c1"}, head, {SetUpdate(Category::kFact, "x", 1)}, kT0).ok());
  CHECK(OpenOn(server->unix_url() + "?db=1")->Head({"acme", "c1"}).value() == 0);

  // The ACL of docs/redis-keys.md: tenant acme may touch only its own keys.
  REQUIRE(server->Run({"ACL", "SETUSER", "acme", "on", ">acme-pw", "~tl:{acme:*", "+@all", "-@dangerous"}) ==
          "OK");
  std::string acme_url = "redis://acme:acme-pw@127.0.0.1:" + std::to_string(server->port());
  auto as_acme = OpenOn(acme_url);
  CHECK(as_acme->Head({"acme", "c1"}).value() == 1);
  REQUIRE(CommitNext(*as_acme, {"acme", "c1"}, head, {SetUpdate(Category::kFact, "x", 2)}, kT0).ok());
  CHECK(as_acme->ListConversations("acme").value() == std::vector<std::string>{"c1"});
  LedgerState other;
  Status denied = CommitNext(*as_acme, {"globex", "c1"}, other, {}, kT0);
  CHECK(denied.code() == StatusCode::kFailedPrecondition);
  CHECK(denied.message().find("NOPERM") != std::string::npos);
  CHECK(as_acme->Head({"globex", "c1"}).error().code() == StatusCode::kFailedPrecondition);
  // A crafted tenant cannot reach acme's keys from another ACL user either.
  CHECK(via_socket->Head({"acme", "c1"}).value() == 2);

  RedisOptions wrong;
  wrong.url = "redis://acme:nope@127.0.0.1:" + std::to_string(server->port());
  auto refused = OpenRedisStore(wrong);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("redis layout: snapshots every K turns, one TTL for every key", "[redis]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url(), StoreOpts(5, std::chrono::seconds(60)));
  ConversationId id{"acme", "layout"};
  LedgerState head;
  for (int i = 1; i <= 12; ++i) {
    REQUIRE(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "i", i)}, kT0).ok());
  }
  auto keys = internal::LedgerKeysFor(id);
  CHECK(server->Run({"ZRANGE", keys.snap_index, "0", "-1"}) == "5\n10");
  CHECK(server->Run({"HLEN", keys.snaps}) == "2");
  CHECK(server->Run({"HEXISTS", keys.snaps, "10"}) == "1");
  CHECK(server->Run({"HLEN", keys.turns}) == "12");
  CHECK(server->Run({"GET", keys.head}) == "12");
  for (const std::string& key : {keys.head, keys.turns, keys.snaps, keys.snap_index}) {
    INFO(key);
    long ttl = std::stol(server->Run({"PTTL", key}));
    CHECK(ttl > 50'000);
    CHECK(ttl <= 60'000);
  }
  // A store without retention takes over: nothing may expire piecemeal.
  auto keeper = OpenOn(server->url(), StoreOpts(5));
  REQUIRE(CommitNext(*keeper, id, head, {}, kT0).ok());
  for (const std::string& key : {keys.head, keys.turns, keys.snaps, keys.snap_index}) {
    INFO(key);
    CHECK(server->Run({"PTTL", key}) == "-1");
  }
}

TEST_CASE("redis: a retried commit that already landed succeeds once", "[redis]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url());
  ConversationId id{"acme", "retry"};
  TurnRecord turn;
  turn.turn = 1;
  turn.committed_at_ms = kT0;
  turn.updates = {SetUpdate(Category::kFact, "paid", true)};
  LedgerState after;
  REQUIRE(ApplyTurn(after, turn).ok());
  REQUIRE(store->CommitTurn(id, turn, after).ok());
  CHECK(store->CommitTurn(id, turn, after).ok());  // the same bytes again: already there
  CHECK(store->Head(id).value() == 1);
  CHECK(server->Run({"HLEN", internal::LedgerKeysFor(id).turns}) == "1");

  TurnRecord different = turn;  // same version, other content: a real conflict
  different.updates = {SetUpdate(Category::kFact, "paid", false)};
  LedgerState other;
  REQUIRE(ApplyTurn(other, different).ok());
  CHECK(store->CommitTurn(id, different, other).code() == StatusCode::kConflict);
  CHECK(store->ReadHead(id).value() == after);
}

TEST_CASE("redis: the function library is reloaded after FUNCTION FLUSH", "[redis]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url());
  ConversationId id{"acme", "flush"};
  LedgerState head;
  REQUIRE(CommitNext(*store, id, head, {}, kT0).ok());
  REQUIRE(server->Run({"FUNCTION", "FLUSH"}) == "OK");
  REQUIRE(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "after", "flush")}, kT0).ok());
  REQUIRE(server->Run({"FUNCTION", "FLUSH"}) == "OK");
  CHECK(store->ReadHead(id).value() == head);
  CHECK(server->Run({"FUNCTION", "LIST", "LIBRARYNAME", "taskledger"}).find("tl_commit") != std::string::npos);
}

TEST_CASE("redis: stored records that fail to decode are Corruption, not a crash", "[redis]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url());
  ConversationId id{"acme", "tampered"};
  LedgerState head;
  REQUIRE(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "x", 1)}, kT0).ok());
  auto keys = internal::LedgerKeysFor(id);
  REQUIRE(server->Run({"HSET", keys.turns, "1", "\xff garbage"}) == "0");
  CHECK(store->ReadVersion(id, 1).error().code() == StatusCode::kCorruption);
  CHECK(store->ReadTurns(id, 1, 1).error().code() == StatusCode::kCorruption);
  REQUIRE(server->Run({"SET", keys.head, "seven"}) == "OK");
  CHECK(store->Head(id).error().code() == StatusCode::kCorruption);
}

TEST_CASE("redis: later turns (payload outside Lua) keep conflict, retry and debris rules", "[redis]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url(), StoreOpts(100));
  ConversationId id{"acme", "fast"};
  LedgerState head;
  REQUIRE(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "n", 1)}, kT0).ok());

  // Turn 2 goes through MULTI / tl_advance / HSETNX: a retry of the very same
  // turn is recognised as landed, another turn 2 is a Conflict.
  TurnRecord two;
  LedgerState before_two = head;
  REQUIRE(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "n", 2)}, kT0, &two).ok());
  CHECK(store->CommitTurn(id, two, head).ok());
  TurnRecord rival = two;
  rival.updates = {SetUpdate(Category::kFact, "n", -2)};
  LedgerState rival_after = before_two;
  REQUIRE(ApplyTurn(rival_after, rival).ok());
  CHECK(store->CommitTurn(id, rival, rival_after).code() == StatusCode::kConflict);
  CHECK(store->ReadTurns(id, 2, 2).value().front() == two);

  // A turn built on a version the store does not have is a Conflict; the
  // turn field its HSETNX left above the head must not stand in for the real
  // turn of that version later.
  TurnRecord ahead;
  ahead.turn = 4;
  ahead.committed_at_ms = kT0 + 99;
  ahead.updates = {SetUpdate(Category::kFact, "ahead", true)};
  LedgerState ahead_state;
  ahead_state.version = 4;
  CHECK(store->CommitTurn(id, ahead, ahead_state).code() == StatusCode::kConflict);
  CHECK(store->Head(id).value() == 2);
  TurnRecord three, four;
  REQUIRE(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "n", 3)}, kT0, &three).ok());
  REQUIRE(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "n", 4)}, kT0, &four).ok());
  CHECK(store->ReadTurns(id, 3, 4).value() == std::vector<TurnRecord>{three, four});
  CHECK(store->ReadHead(id).value() == head);

  // The same in one pipelined batch: one conversation's conflict does not
  // disturb the others.
  ConversationId other{"acme", "fast-2"};
  LedgerState other_head;
  REQUIRE(CommitNext(*store, other, other_head, {}, kT0).ok());
  TurnRecord five, stale = four;
  five.turn = 5;
  five.committed_at_ms = kT0;
  five.updates = {SetUpdate(Category::kFact, "n", 5)};
  LedgerState five_after = head;
  REQUIRE(ApplyTurn(five_after, five).ok());
  TurnRecord other_two;
  other_two.turn = 2;
  LedgerState other_after = other_head;
  REQUIRE(ApplyTurn(other_after, other_two).ok());
  stale.updates = {SetUpdate(Category::kFact, "n", 44)};
  std::vector<CommitRequest> batch = {{id, &five, &five_after}, {other, &other_two, &other_after},
                                      {id, &stale, &head}};
  auto statuses = store->CommitTurns(batch);
  CHECK(statuses[0].ok());
  CHECK(statuses[1].ok());
  CHECK(statuses[2].code() == StatusCode::kConflict);
  CHECK(store->ReadHead(id).value() == five_after);
  CHECK(store->ReadHead(other).value() == other_after);
}

TEST_CASE("redis: a flushed function library is reloaded for later turns too", "[redis]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url(), StoreOpts(100));
  ConversationId id{"acme", "flush-late"};
  LedgerState head;
  REQUIRE(CommitNext(*store, id, head, {}, kT0).ok());
  REQUIRE(server->Run({"FUNCTION", "FLUSH"}) == "OK");
  TurnRecord two;
  REQUIRE(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "x", 2)}, kT0, &two).ok());
  CHECK(store->ReadTurns(id, 2, 2).value().front() == two);
  CHECK(store->ReadHead(id).value() == head);
}
