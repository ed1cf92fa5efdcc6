// Rebase after other writers' turns (Store::ReadHeadAfter): a Ledger reaches
// exactly the head a reopen reads, on every store. On Redis it reads only the
// turns committed since its head, in one call, while the conversation is the
// incarnation that head was read in; a conversation dropped and written again
// (even turn for turn with the same clock), a stream written before
// incarnations, or a head too far behind is read whole.
#include <catch2/catch.hpp>

#include <string>

#include "internal/redis_records.h"
#include "ledger/store_backends.h"
#include "support/forwarding_store.h"
#include "support/redis_server.h"
#include "taskledger/ledger/ledger.h"
#include "taskledger/redis/keys.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// A store with none of its own catching up: Store's default ReadHeadAfter.
struct DefaultBackend : MemoryBackend {
  std::unique_ptr<Store> Open(StoreOptions options = {}) {
    return std::make_unique<ForwardingStore>(NewMemoryStore(options, clock));
  }
};

// A RedisStore on a private server, whose command counters say what a read did.
struct PrivateRedis {
  std::unique_ptr<RedisServer> server = RedisServer::Start();
  std::unique_ptr<Store> store;
  explicit PrivateRedis(uint32_t snapshot_every = 4) {
    RedisOptions options;
    options.url = server->url();
    options.store = StoreOpts(snapshot_every);
    auto opened = OpenRedisStore(options);
    REQUIRE(opened.has_value());
    store = std::move(opened).value();
  }
  void ResetCounts() { REQUIRE(server->Run({"CONFIG", "RESETSTAT"}) == "OK"); }
  // calls= of one command in INFO commandstats (commands run by functions included).
  int64_t Calls(const std::string& command) const {
    const std::string info = server->Run({"INFO", "commandstats"});
    const std::string tag = "cmdstat_" + command + ":calls=";
    const size_t at = info.find(tag);
    return at == std::string::npos ? 0 : std::stoll(info.substr(at + tag.size()));
  }
  // Whether the last reads read the whole head (paging back from it) rather
  // than only the turns after a held one.
  bool ReadWhole() const { return Calls("xrevrange") > 0; }
};

// Turn head.version+1 setting `key` = `value`, committed at `now_ms`.
Status CommitSet(Store& store, const ConversationId& id, LedgerState& head, const std::string& key,
                 const nlohmann::json& value, int64_t now_ms) {
  return CommitNext(store, id, head, {SetUpdate(Category::kFact, key, value)}, now_ms);
}

}  // namespace

TEMPLATE_TEST_CASE("ledger: Rebase after another writer's turns reaches the head a reopen reads",
                   "[ledger]", MemoryBackend, RedisBackend, DefaultBackend) {
  TestType backend;
  auto store = backend.Open();
  auto id = backend.Id("acme", "catch-up");
  auto bob = Ledger::Open(*store, id, backend.clock).value();
  REQUIRE(bob->Stage(SetUpdate(Category::kIdentifier, "order", "#W1")).ok());
  bob->StageCall(CallRecord{0, {"b1", "get_order_details", {{"order_id", "#W1"}}}, false, "ok"});
  REQUIRE(bob->Commit().value() == 1);

  auto alice = Ledger::Open(*store, id, backend.clock).value();
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 5; ++i) {
      backend.clock.Advance(1000);
      const std::string n = std::to_string(round) + "-" + std::to_string(i);
      REQUIRE(alice->Stage(SetUpdate(Category::kFact, "alice_" + n, i)).ok());
      if (i == 2) REQUIRE(alice->Stage(RemoveUpdate(Category::kIdentifier, "order")).ok());
      alice->StageCall(CallRecord{0, {"a" + n, "lookup", {{"i", i}}}, false, "ok"});
      REQUIRE(alice->Commit().has_value());
    }
    // Bob's turn was built on his old head: Conflict, then a rebase that
    // must land exactly on alice's head, his staged update on top.
    REQUIRE(bob->Stage(SetUpdate(Category::kFact, "bob_" + std::to_string(round), true)).ok());
    REQUIRE(bob->Commit().error().code() == StatusCode::kConflict);
    REQUIRE(bob->Rebase().ok());
    CHECK(bob->head() == store->ReadHead(id).value());
    CHECK(bob->head() == alice->head());
    CHECK(bob->working().of(Category::kFact).count("bob_" + std::to_string(round)) == 1);
    REQUIRE(bob->Commit().has_value());
    REQUIRE(alice->Rebase().ok());
    CHECK(alice->head() == bob->head());
  }
  const LedgerState head = store->ReadHead(id).value();
  CHECK(head.version == 13);
  CHECK(head == bob->head());
  CHECK(head.calls.size() == 11);
  CHECK(head.of(Category::kIdentifier).count("order") == 0);
  CHECK(head.of(Category::kFact).size() == 12);
}

TEST_CASE("redis: a rebase reads the other writer's turns in one call, not the whole head",
          "[redis]") {
  PrivateRedis redis;
  ManualClock clock;
  ConversationId id{"acme", "since"};
  auto bob = Ledger::Open(*redis.store, id, clock).value();
  auto alice = Ledger::Open(*redis.store, id, clock).value();
  CHECK(alice->known_head().incarnation.empty());  // no conversation yet
  for (int i = 0; i < 40; ++i) {  // snapshots at 4, 8, ...: a whole read would page back
    REQUIRE(alice->Stage(SetUpdate(Category::kFact, "n" + std::to_string(i), i)).ok());
    clock.Advance(1);
    REQUIRE(alice->Commit().has_value());
    // Alice created it, and asked its incarnation once.
    REQUIRE(alice->known_head().incarnation.size() == 32);  // 128 bits, in hex
  }
  // Bob opened before the conversation existed: his first rebase reads the
  // head whole, and with it the conversation's incarnation; then he catches up.
  REQUIRE(bob->Stage(SetUpdate(Category::kFact, "bob", 1)).ok());
  REQUIRE(bob->Commit().error().code() == StatusCode::kConflict);
  REQUIRE(bob->Rebase().ok());
  CHECK(bob->known_head().incarnation == alice->known_head().incarnation);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(alice->Rebase().ok());
    REQUIRE(alice->Stage(SetUpdate(Category::kFact, "alice", i)).ok());
    clock.Advance(1);
    REQUIRE(alice->Commit().has_value());
  }
  REQUIRE(bob->Commit().error().code() == StatusCode::kConflict);
  redis.ResetCounts();
  REQUIRE(bob->Rebase().ok());
  CHECK(redis.Calls("fcall") == 1);
  CHECK_FALSE(redis.ReadWhole());
  CHECK(bob->head() == alice->head());
  REQUIRE(bob->Commit().value() == 44);
  CHECK(redis.store->ReadHead(id).value() == bob->head());
}

TEST_CASE("redis: ReadHeadAfter catches up only within the incarnation the head was read in",
          "[redis]") {
  PrivateRedis redis;
  Store& store = *redis.store;
  const ConversationId id{"acme", "after"};
  const int64_t t0 = 1'700'000'000'000;
  LedgerState mine;
  REQUIRE(CommitSet(store, id, mine, "refund_approved", true, t0).ok());
  REQUIRE(CommitSet(store, id, mine, "step", 2, t0 + 1).ok());
  const HeadRead held = store.ReadHeadAfter(id, {}).value();  // version 2, read whole
  REQUIRE(held.state == mine);
  REQUIRE(held.incarnation.size() == 32);
  REQUIRE(held.turn != nullptr);
  CHECK(*held.turn == store.ReadTurns(id, 2, 2).value().front());
  // Its creator's view: turn 1 as committed gives the incarnation; any other
  // turn none.
  TurnRecord one = store.ReadTurns(id, 1, 1).value().front();
  CHECK(store.IncarnationOf(id, one).value() == held.incarnation);
  one.committed_at_ms += 1;
  CHECK(store.IncarnationOf(id, one).value().empty());
  CHECK(store.IncarnationOf(id, *held.turn).value().empty());
  LedgerState theirs = mine;
  for (int i = 3; i <= 9; ++i) REQUIRE(CommitSet(store, id, theirs, "step", i, t0 + i).ok());

  SECTION("the same incarnation: the turns after the held head only") {
    redis.ResetCounts();
    auto read = store.ReadHeadAfter(id, held);
    REQUIRE(read.has_value());
    CHECK(read->state == theirs);
    CHECK(read->incarnation == held.incarnation);
    CHECK(read->extends_known);
    CHECK_FALSE(redis.ReadWhole());
    // Already at the head: the same state back.
    auto again = store.ReadHeadAfter(id, *read);
    REQUIRE(again.has_value());
    CHECK(again->state == theirs);
    CHECK_FALSE(redis.ReadWhole());
  }
  SECTION("no incarnation or another one, or no turn: the whole head") {
    for (const std::string& incarnation : {std::string(), std::string(32, '0'), held.incarnation}) {
      HeadRead known = held;
      known.incarnation = incarnation;
      if (incarnation == held.incarnation) known.turn = nullptr;
      redis.ResetCounts();
      auto read = store.ReadHeadAfter(id, known);
      REQUIRE(read.has_value());
      CHECK(read->state == theirs);
      CHECK(read->incarnation == held.incarnation);
      CHECK(redis.ReadWhole());
      CHECK_FALSE(read->extends_known);
      // Another incarnation: tl_since's labels the whole read. Without one
      // or a turn to compare, tl_since is not asked, and the incarnation is
      // read in the first page's round trip.
      const bool asked = incarnation == std::string(32, '0');
      CHECK(redis.Calls("fcall") == (asked ? 1 : 0));
      CHECK(redis.Calls("xrange") == (asked ? 2 : 1));
    }
  }
  SECTION("dropped and written again, turn for turn at the same times: the new one, whole") {
    REQUIRE(store.DropConversation(id).ok());
    // Turn 1 no longer approves the refund; turns 2.. are the old ones, byte
    // for byte. Only the incarnation tells the held head is not this one's.
    LedgerState again;
    REQUIRE(CommitSet(store, id, again, "refund_approved", false, t0).ok());
    REQUIRE(CommitSet(store, id, again, "step", 2, t0 + 1).ok());
    REQUIRE(CommitSet(store, id, again, "step", 3, t0 + 3).ok());
    redis.ResetCounts();
    auto read = store.ReadHeadAfter(id, held);
    REQUIRE(read.has_value());
    CHECK(read->state == again);
    CHECK(read->state.of(Category::kFact).at("refund_approved").value == false);
    CHECK(read->incarnation.size() == 32);
    CHECK(read->incarnation != held.incarnation);
    CHECK(redis.ReadWhole());
  }
  SECTION("the held turn lost and written again in the same incarnation: whole") {
    // As after a failover that lost the newest turns (asynchronous
    // replication): entry 2 is gone, and another turn 2 takes its place.
    const std::string key = internal::TurnStreamKey(id);
    for (int v = 2; v <= 9; ++v)
      REQUIRE(redis.server->Run({"XDEL", key, "0-" + std::to_string(v)}) == "1");
    REQUIRE(redis.server->Run({"XSETID", key, "0-1"}) == "OK");
    LedgerState rewritten = store.ReadVersion(id, 1).value();
    REQUIRE(CommitSet(store, id, rewritten, "refund_approved", false, t0 + 1).ok());
    REQUIRE(CommitSet(store, id, rewritten, "step", 3, t0 + 3).ok());
    redis.ResetCounts();
    auto read = store.ReadHeadAfter(id, held);
    REQUIRE(read.has_value());
    CHECK(read->state == rewritten);
    CHECK(read->incarnation == held.incarnation);
    CHECK(redis.ReadWhole());
  }
  SECTION("dropped: the empty head, no incarnation") {
    REQUIRE(store.DropConversation(id).ok());
    auto read = store.ReadHeadAfter(id, held);
    REQUIRE(read.has_value());
    CHECK(read->state.version == 0);
    CHECK(read->incarnation.empty());
  }
  SECTION("more turns behind than a sixteenth of the held records (at least 64): whole") {
    for (int i = 10; i <= 66; ++i) REQUIRE(CommitSet(store, id, theirs, "step", i, t0 + i).ok());
    redis.ResetCounts();
    auto read = store.ReadHeadAfter(id, held);  // 64 behind
    REQUIRE(read.has_value());
    CHECK(read->state == theirs);
    CHECK_FALSE(redis.ReadWhole());
    REQUIRE(CommitSet(store, id, theirs, "step", 67, t0 + 67).ok());
    redis.ResetCounts();
    read = store.ReadHeadAfter(id, held);  // 65 behind
    REQUIRE(read.has_value());
    CHECK(read->state == theirs);
    CHECK(read->incarnation == held.incarnation);
    CHECK(redis.ReadWhole());
    CHECK_FALSE(read->extends_known);
    // The incarnation tl_since showed labels the whole read: no XRANGE of
    // its own beside tl_since's two.
    CHECK(redis.Calls("fcall") == 1);
    CHECK(redis.Calls("xrange") == 2);
  }
}

TEST_CASE("redis: a stream written before incarnations is always read whole", "[redis]") {
  PrivateRedis redis;
  const ConversationId id{"acme", "old"};
  const std::string key = internal::TurnStreamKey(id);
  // The entries as 0.1 wrote them: field t only (and s on snapshot turns).
  LedgerState head;
  for (uint64_t v = 1; v <= 3; ++v) {
    TurnRecord turn;
    turn.turn = v;
    turn.committed_at_ms = 1'700'000'000'000 + static_cast<int64_t>(v);
    turn.updates.push_back(SetUpdate(Category::kFact, "n", v));
    turn.updates.back().provenance.turn = v;
    REQUIRE(ApplyTurn(head, turn).ok());
    REQUIRE(redis.server->Run({"XADD", key, "0-" + std::to_string(v), "t",
                               internal::TurnRecordBytes(turn)}) == "0-" + std::to_string(v));
  }
  const HeadRead held = redis.store->ReadHeadAfter(id, {}).value();
  CHECK(held.state == head);
  CHECK(held.incarnation.empty());
  // Written on by this version: still no incarnation (only a new
  // conversation's first entry gets one), so still read whole.
  LedgerState mine = head;
  REQUIRE(CommitSet(*redis.store, id, mine, "n", 4, 1'700'000'000'004).ok());
  redis.ResetCounts();
  // Even given an incarnation, the stream shows none: read whole.
  HeadRead known = held;
  known.incarnation = std::string(32, 'a');
  redis.ResetCounts();
  auto read = redis.store->ReadHeadAfter(id, known);
  REQUIRE(read.has_value());
  CHECK(read->state == mine);
  CHECK(read->incarnation.empty());
  CHECK(redis.ReadWhole());
}

// A server whose taskledger_ledger library is an older one (a process of an
// earlier version loaded it last): its tl_commit would take the empty
// snapshot argument a first turn sends before its incarnation for a
// snapshot, leaving the conversation unreadable. The first turn goes to
// tl_commit2, which such a library does not have: the writer loads its own,
// and the conversation reads back.
TEST_CASE("redis: a first turn on a server holding an older library lands readable", "[redis]") {
  PrivateRedis redis;
  const char* older = R"LUA(#!lua name=taskledger_ledger
redis.register_function('tl_commit', function(keys, args)
  local key, base, retention, turn, snapshot = keys[1], tonumber(args[1]), args[2], args[3], args[4]
  if redis.call('XLEN', key) ~= base then return redis.error_reply('TLCONFLICT 0') end
  local id = string.format('0-%d', base + 1)
  if snapshot then
    redis.call('XADD', key, id, 't', turn, 's', snapshot)
  else
    redis.call('XADD', key, id, 't', turn)
  end
  return base + 1
end)
)LUA";
  REQUIRE(redis.server->Run({"FUNCTION", "LOAD", "REPLACE", older}) == "taskledger_ledger");
  const ConversationId id{"acme", "older"};
  LedgerState mine;
  REQUIRE(CommitSet(*redis.store, id, mine, "n", 1, 1'700'000'000'000).ok());
  CHECK(redis.store->ReadHead(id).value() == mine);
  const HeadRead read = redis.store->ReadHeadAfter(id, {}).value();
  CHECK(read.state == mine);
  CHECK(read.incarnation.size() == 32);
}
