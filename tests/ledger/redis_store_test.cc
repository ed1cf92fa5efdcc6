// RedisStore specifics against a real redis-server: URL parsing, unix socket
// and ACL-user URLs, the per-tenant ACL from docs/redis-keys.md, the layout
// (one stream per conversation under a hash tag, snapshots every K turns, one
// TTL), and the commit protocol: two writers, a dropped conversation, retried
// commits, a base above the head, gaps, and readers with another
// snapshot_every. More in redis_commit_test.cc.
#include <catch2/catch.hpp>

#include "internal/redis_stream.h"
#include "ledger/store_backends.h"
#include "taskledger/redis/client.h"
#include "taskledger/redis/keys.h"

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

// Versions of the stream entries of `id` that carry a full state (field s).
std::vector<uint64_t> SnapshotVersions(const RedisServer& server, const ConversationId& id) {
  internal::RedisClient client(internal::ParseRedisUrl(server.url()).value(), {});
  auto reply = client.Command({"XRANGE", internal::TurnStreamKey(id), "-", "+"});
  REQUIRE(reply.has_value());
  std::vector<internal::StreamEntry> entries;
  REQUIRE(internal::AppendEntries(*reply, "test", entries).ok());
  std::vector<uint64_t> out;
  for (const auto& e : entries) {
    if (e.state != nullptr) out.push_back(e.version);
  }
  return out;
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

  for (const char* bad :
       {"http://h:1", "redis://", "redis://h:0", "redis://h:70000", "redis://h:x", "redis://h:1/db",
        "redis://user@h", "redis://u:%zz@h", "unix://relative.sock", "unix:///s?timeout=1",
        "rediss://h:1?ca", "rediss://h:1?cert=/c.pem", "redis://[::1"}) {
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
  CHECK(internal::TurnStreamKey({"a}:x", "{c}"}) == "tl:{a%7D%3Ax:%7Bc%7D}:turns");
  CHECK(internal::TenantStreamPattern("a*") == "tl:{a%2A:*}:turns");
  CHECK(internal::ConversationOfStreamKey("tl:{a%2A:c%3A1}:turns", "a*").value() == "c:1");
  CHECK_FALSE(internal::ConversationOfStreamKey("tl:{a%2A:c1}:head", "a*").has_value());
  CHECK(internal::EntryId(42) == "0-42");
  CHECK(internal::VersionOfEntryId("0-42").value() == 42);
  for (const char* bad : {"1-42", "0-", "0-0", "0-4x", "42"})
    CHECK_FALSE(internal::VersionOfEntryId(bad).has_value());
}

TEST_CASE("redis: unix socket URL, ACL user URL, and a per-tenant ACL", "[redis]") {
  auto server = RedisServer::Start(RedisServerOptions{true, {}});
  LedgerState head;
  auto via_socket = OpenOn(server->unix_url());
  REQUIRE(CommitNext(*via_socket, {"acme", "c1"}, head, {SetUpdate(Category::kFact, "x", 1)}, kT0)
              .ok());
  CHECK(OpenOn(server->unix_url() + "?db=1")->Head({"acme", "c1"}).value() == 0);

  // The ACL of docs/redis-keys.md: tenant acme may touch only its own keys.
  REQUIRE(server->Run({"ACL", "SETUSER", "acme", "on", ">acme-pw", "~tl:{acme:*", "+@all",
                       "-@dangerous"}) == "OK");
  std::string acme_url = "redis://acme:acme-pw@127.0.0.1:" + std::to_string(server->port());
  auto as_acme = OpenOn(acme_url);
  CHECK(as_acme->Head({"acme", "c1"}).value() == 1);
  REQUIRE(
      CommitNext(*as_acme, {"acme", "c1"}, head, {SetUpdate(Category::kFact, "x", 2)}, kT0).ok());
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

TEST_CASE("redis layout: one stream per conversation, snapshots every K turns, one TTL",
          "[redis]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url(), StoreOpts(5, std::chrono::seconds(60)));
  ConversationId id{"acme", "layout"};
  LedgerState head;
  for (int i = 1; i <= 12; ++i) {
    REQUIRE(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "i", i)}, kT0).ok());
  }
  std::string key = internal::TurnStreamKey(id);
  CHECK(server->Run({"TYPE", key}) == "stream");
  CHECK(server->Run({"XLEN", key}) == "12");
  CHECK(server->Run({"DBSIZE"}) == "1");  // nothing else: no head, index or snapshot keys
  CHECK(SnapshotVersions(*server, id) == std::vector<uint64_t>{5, 10});
  long ttl = std::stol(server->Run({"PTTL", key}));
  CHECK(ttl > 50'000);
  CHECK(ttl <= 60'000);
  // A store without retention takes over: the conversation no longer expires.
  auto keeper = OpenOn(server->url(), StoreOpts(5));
  REQUIRE(CommitNext(*keeper, id, head, {}, kT0).ok());
  CHECK(server->Run({"PTTL", key}) == "-1");
  // The commit function was loaded at open; after a FUNCTION FLUSH the next
  // commit loads it again and lands.
  CHECK(server->Run({"FUNCTION", "LIST"}).find("taskledger_ledger") != std::string::npos);
  REQUIRE(server->Run({"FUNCTION", "FLUSH"}) == "OK");
  REQUIRE(CommitNext(*keeper, id, head, {}, kT0).ok());
  CHECK(server->Run({"FUNCTION", "LIST"}).find("tl_commit") != std::string::npos);
  CHECK(store->ReadHead(id).value() == head);
}

TEST_CASE("redis: a conversation of many calls and few entries spaces its snapshots out",
          "[redis]") {
  // Every gated write is a turn with one call and no entry: the snapshot
  // carries every call, so its stride follows the calls too (with entries
  // only, each 16th write re-encoded the whole call history).
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url(), StoreOpts(4));
  ConversationId id{"acme", "calls"};
  LedgerState head;
  TurnRecord first;
  first.turn = 1;
  first.committed_at_ms = kT0;
  for (int i = 0; i < 1100; ++i) {
    first.calls.push_back(
        CallRecord{1, {"c" + std::to_string(i), "ship", {{"item", i}}}, true, "succeeded"});
  }
  LedgerState after = head;
  REQUIRE(ApplyTurn(after, first).ok());
  REQUIRE(store->CommitTurn(id, first, after).ok());
  head = std::move(after);
  for (int i = 2; i <= 40; ++i) REQUIRE(CommitNext(*store, id, head, {}, kT0).ok());
  // 1,100 records: the stride 4 doubles twice (512 and 1,024), to 16.
  CHECK(SnapshotVersions(*server, id) == std::vector<uint64_t>{16, 32});
  auto read = store->ReadHead(id);
  REQUIRE(read.has_value());
  CHECK(read->calls.size() == 1100);
  CHECK(*read == head);
  auto at = store->ReadVersion(id, 20);
  REQUIRE(at.has_value());
  CHECK(at->version == 20);
  CHECK(at->calls.size() == 1100);
}

TEST_CASE("redis: two writers on one conversation, the second gets Conflict naming the head",
          "[redis]") {
  auto server = RedisServer::Start();
  auto alice = OpenOn(server->url(), StoreOpts(4));
  auto bob = OpenOn(server->url(), StoreOpts(4));
  ConversationId id{"acme", "race"};
  LedgerState a, b;
  for (int i = 1; i <= 3; ++i)
    REQUIRE(CommitNext(*alice, id, a, {SetUpdate(Category::kFact, "n", i)}, kT0).ok());
  b = bob->ReadHead(id).value();
  REQUIRE(CommitNext(*alice, id, a, {SetUpdate(Category::kFact, "by", "alice")}, kT0)
              .ok());  // 4, a snapshot
  Status lost = CommitNext(*bob, id, b, {SetUpdate(Category::kFact, "by", "bob")}, kT0);
  CHECK(lost.code() == StatusCode::kConflict);
  CHECK(lost.message().find("is at version 4; this turn was built on version 3") !=
        std::string::npos);
  CHECK(b.version == 3);
  b = bob->ReadHead(id).value();  // Bob rebases and wins the next round
  REQUIRE(CommitNext(*bob, id, b, {SetUpdate(Category::kFact, "by", "bob")}, kT0).ok());
  CHECK(CommitNext(*alice, id, a, {}, kT0).code() == StatusCode::kConflict);
  CHECK(alice->ReadHead(id).value() == b);
  CHECK(alice->ReadVersion(id, 4).value().of(Category::kFact).at("by").value == "alice");
}

TEST_CASE("redis: a dropped conversation is not re-created by a writer holding its old head",
          "[redis]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url());
  ConversationId id{"acme", "dropped"};
  LedgerState head;
  for (int i = 1; i <= 3; ++i) REQUIRE(CommitNext(*store, id, head, {}, kT0).ok());
  REQUIRE(store->DropConversation(id).ok());
  Status late = CommitNext(*store, id, head, {SetUpdate(Category::kFact, "late", true)}, kT0);
  CHECK(late.code() == StatusCode::kConflict);
  CHECK(late.message().find("does not exist") != std::string::npos);
  CHECK(server->Run({"EXISTS", internal::TurnStreamKey(id)}) == "0");
  CHECK(store->Head(id).value() == 0);
  CHECK(store->ListConversations("acme").value().empty());
  LedgerState fresh;  // starting over from version 0 works
  REQUIRE(CommitNext(*store, id, fresh, {}, kT0).ok());
  CHECK(store->Head(id).value() == 1);
}

TEST_CASE("redis: a retried commit that already landed succeeds once", "[redis]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url(), StoreOpts(3));
  ConversationId id{"acme", "retry"};
  LedgerState head;
  // Turn 1 (creates the stream), 2 (a plain turn), 3 (a snapshot turn).
  for (int i = 1; i <= 3; ++i) {
    INFO("turn " << i);
    TurnRecord turn;
    LedgerState before = head;
    REQUIRE(
        CommitNext(*store, id, head, {SetUpdate(Category::kFact, "paid", i)}, kT0 + i, &turn).ok());
    CHECK(store->CommitTurn(id, turn, head).ok());  // the same bytes again: already there
    CHECK(server->Run({"XLEN", internal::TurnStreamKey(id)}) == std::to_string(i));
    TurnRecord different = turn;  // same version, other content: a real conflict
    different.updates = {SetUpdate(Category::kFact, "paid", -i)};
    LedgerState other = before;
    REQUIRE(ApplyTurn(other, different).ok());
    CHECK(store->CommitTurn(id, different, other).code() == StatusCode::kConflict);
    CHECK(store->ReadHead(id).value() == head);
  }
}

TEST_CASE("redis: a base above the head is a Conflict and leaves no gap behind", "[redis]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url(), StoreOpts(100, std::chrono::seconds(60)));
  ConversationId id{"acme", "ahead"};
  LedgerState head;
  for (int i = 1; i <= 2; ++i)
    REQUIRE(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "n", i)}, kT0).ok());
  LedgerState ahead = head;
  ahead.version = 5;
  Status s = CommitNext(*store, id, ahead, {SetUpdate(Category::kFact, "ahead", true)}, kT0);
  CHECK(s.code() == StatusCode::kConflict);
  CHECK(s.message().find("is at version 2") != std::string::npos);
  CHECK(store->Head(id).value() == 2);
  // The stream's top is back at the head: the real next turn lands.
  TurnRecord three;
  REQUIRE(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "n", 3)}, kT0, &three).ok());
  CHECK(store->ReadTurns(id, 3, 3).value() == std::vector<TurnRecord>{three});
  CHECK(store->ReadHead(id).value() == head);
}

TEST_CASE("redis: a gap in the stream or an undecodable record is Corruption naming it",
          "[redis]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url(), StoreOpts(4));
  ConversationId id{"acme", "tampered"};
  LedgerState head;
  for (int i = 1; i <= 6; ++i)
    REQUIRE(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "x", i)}, kT0).ok());
  std::string key = internal::TurnStreamKey(id);
  REQUIRE(server->Run({"XDEL", key, "0-5"}) == "1");
  Status gap = store->ReadHead(id).error();
  CHECK(gap.code() == StatusCode::kCorruption);
  CHECK(gap.message().find("versions 5..5 are missing") != std::string::npos);
  CHECK(store->ReadVersion(id, 5).error().code() == StatusCode::kCorruption);
  CHECK(store->ReadTurns(id, 3, 6).error().message().find("versions 5..5 are missing") !=
        std::string::npos);
  CHECK(store->ReadVersion(id, 4).value().version == 4);  // below the gap all is well
  CHECK(store->ReadTurns(id, 1, 4).value().size() == 4);
  // The stream now has 5 entries but its top is 6: a writer on version 5 is
  // told so, and nothing is written.
  LedgerState five = store->ReadVersion(id, 4).value();
  five.version = 5;
  Status on_gap = CommitNext(*store, id, five, {SetUpdate(Category::kFact, "x", 0)}, kT0);
  CHECK(on_gap.code() == StatusCode::kCorruption);
  CHECK(on_gap.message().find("5 entries but XADD 0-6 refused") != std::string::npos);
  CHECK(server->Run({"XLEN", key}) == "5");

  REQUIRE(server->Run({"XADD", key, "0-7", "t", "\xff garbage"}) == "0-7");
  CHECK(store->ReadTurns(id, 7, 7).error().code() == StatusCode::kCorruption);
  REQUIRE(server->Run({"XADD", key, "9-1", "t", "x"}) == "9-1");
  CHECK(store->Head(id).error().code() == StatusCode::kCorruption);
  ConversationId wrong{"acme", "wrong-type"};
  REQUIRE(server->Run({"HSET", internal::TurnStreamKey(wrong), "1", "x"}) == "1");
  CHECK(store->Head(wrong).error().message().find("WRONGTYPE") != std::string::npos);
}

TEST_CASE("redis: readers with another snapshot_every read every version exactly", "[redis]") {
  auto server = RedisServer::Start();
  auto writer = OpenOn(server->url(), StoreOpts(5));
  ConversationId id{"acme", "mixed"};
  std::vector<LedgerState> states(1);
  LedgerState head;
  for (int i = 1; i <= 40; ++i) {
    // Half-way the writer changes its mind: snapshots every 7 from turn 21 on.
    if (i == 21) writer = OpenOn(server->url(), StoreOpts(7));
    REQUIRE(CommitNext(*writer, id, head,
                       {SetUpdate(Category::kFact, "k" + std::to_string(i % 6), i)}, kT0)
                .ok());
    states.push_back(head);
  }
  CHECK(SnapshotVersions(*server, id) == std::vector<uint64_t>{5, 10, 15, 20, 21, 28, 35});
  for (uint32_t every : {1u, 3u, 5u, 16u, 100u}) {
    auto reader = OpenOn(server->url(), StoreOpts(every));
    for (uint64_t v = 0; v < states.size(); ++v) {
      INFO("snapshot_every " << every << ", version " << v);
      CHECK(reader->ReadVersion(id, v).value() == states[v]);
    }
    CHECK(reader->ReadHead(id).value() == head);
    CHECK(reader->ReadVersion(id, 41).error().code() == StatusCode::kNotFound);
  }
}

TEST_CASE("redis: a batch pipelines many conversations, each with its own outcome", "[redis]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url(), StoreOpts(2));
  ConversationId fresh{"acme", "b-fresh"}, moved{"acme", "b-moved"}, retried{"acme", "b-retried"};
  LedgerState moved_head, retried_head;
  REQUIRE(CommitNext(*store, moved, moved_head, {}, kT0).ok());
  TurnRecord landed;
  REQUIRE(CommitNext(*store, retried, retried_head, {}, kT0, &landed).ok());
  TurnRecord one, stale;
  one.turn = stale.turn = 1;
  stale.committed_at_ms = kT0 + 1;
  LedgerState one_after, stale_after;
  REQUIRE(ApplyTurn(one_after, one).ok());
  REQUIRE(ApplyTurn(stale_after, stale).ok());
  std::vector<CommitRequest> batch = {
      {fresh, &one, &one_after}, {moved, &stale, &stale_after}, {retried, &landed, &retried_head}};
  auto statuses = store->CommitTurns(batch);
  CHECK(statuses[0].ok());
  CHECK(statuses[1].code() == StatusCode::kConflict);
  CHECK(statuses[2].ok());
  CHECK(store->Head(fresh).value() == 1);
  CHECK(store->ReadHead(moved).value() == moved_head);
}

TEST_CASE("redis: a batch longer than one send chunk starts going out while it is encoded",
          "[redis]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url(), StoreOpts(4));
  // ~600 KB of turns: several RedisClient::kStreamBytes chunks, each sent as
  // soon as it is queued; one conversation in the middle has moved on.
  constexpr size_t kCount = 300;
  std::vector<ConversationId> ids;
  std::vector<TurnRecord> turns(kCount);
  std::vector<LedgerState> afters(kCount);
  std::vector<CommitRequest> batch;
  for (size_t i = 0; i < kCount; ++i) ids.push_back({"acme", "big-" + std::to_string(i)});
  LedgerState moved_head;
  REQUIRE(CommitNext(*store, ids[150], moved_head, {}, kT0).ok());
  for (size_t i = 0; i < kCount; ++i) {
    turns[i].turn = 1;
    turns[i].committed_at_ms = kT0;
    turns[i].updates = {
        SetUpdate(Category::kFact, "blob", std::string(2000, static_cast<char>('a' + i % 26)))};
    REQUIRE(ApplyTurn(afters[i], turns[i]).ok());
    batch.push_back({ids[i], &turns[i], &afters[i]});
  }
  auto statuses = store->CommitTurns(batch);
  REQUIRE(statuses.size() == kCount);
  for (size_t i = 0; i < kCount; ++i) {
    INFO("conversation " << i);
    CHECK(statuses[i].code() == (i == 150 ? StatusCode::kConflict : StatusCode::kOk));
    if (i != 150) CHECK(store->ReadHead(ids[i]).value() == afters[i]);
  }
  CHECK(store->ReadHead(ids[150]).value() == moved_head);
  // The pooled connection is in step afterwards: the next call reads its own reply.
  CHECK(store->Head(ids[0]).value() == 1);
}
