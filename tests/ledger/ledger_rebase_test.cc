// Rebase after other writers' turns (Store::ReadHeadAfter): a Ledger that
// committed or caught up before reads only the turns committed since and
// reaches exactly the head a reopen reads; whenever its head cannot be shown
// to be the conversation's history (no stamp, too far behind, the
// conversation dropped and written again) the whole head is read instead.
// Over the memory store (whose head is an O(1) copy), Redis, and a store with
// the default implementation (Head and ReadTurns).
#include <catch2/catch.hpp>

#include <string>
#include <type_traits>

#include "internal/catch_up.h"
#include "ledger/store_backends.h"
#include "support/forwarding_store.h"
#include "support/redis_server.h"
#include "taskledger/ledger/ledger.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// A store with none of its own catching up (ReadHeadAfter is Store's
// default) that counts the states it reads (ReadVersion: the whole head) in
// `*state_reads`, if given.
class CountingStore final : public ForwardingStore {
 public:
  explicit CountingStore(std::unique_ptr<Store> inner, int* state_reads = nullptr)
      : ForwardingStore(std::move(inner)), state_reads_(state_reads) {}
  Result<LedgerState> ReadVersion(const ConversationId& id, uint64_t version) override {
    if (state_reads_ != nullptr) ++*state_reads_;
    return ForwardingStore::ReadVersion(id, version);
  }

 private:
  int* state_reads_;
};

struct DefaultBackend : MemoryBackend {
  int state_reads = 0;
  std::unique_ptr<Store> Open(StoreOptions options = {}) {
    return std::make_unique<CountingStore>(NewMemoryStore(options, clock), &state_reads);
  }
};

// Turn head.version+1 with one call and one fact, committed at `now_ms`.
Status CommitCall(Store& store, const ConversationId& id, LedgerState& head,
                  const std::string& call_id, int64_t now_ms) {
  TurnRecord turn;
  turn.turn = head.version + 1;
  turn.committed_at_ms = now_ms;
  Update u = SetUpdate(Category::kFact, "last_call", call_id);
  u.provenance.turn = turn.turn;
  turn.updates.push_back(std::move(u));
  turn.calls.push_back(CallRecord{turn.turn, {call_id, "ship", {{"n", turn.turn}}}, true, "ok"});
  LedgerState after = head;
  if (Status s = ApplyTurn(after, turn); !s.ok()) return s;
  Status s = store.CommitTurn(id, turn, after);
  if (s.ok()) head = std::move(after);
  return s;
}

// The stamp a whole-head read reports: the head's (RedisStore reads it with
// the head), or 0 (the default implementation cannot tell).
template <typename Backend>
int64_t WholeStamp(int64_t head_stamp) {
  return Backend::kIsRedis ? head_stamp : 0;
}

// calls= of one command in INFO commandstats ("cmdstat_xrange:calls=3,...").
int64_t Calls(const RedisServer& server, const std::string& command) {
  const std::string info = server.Run({"INFO", "commandstats"});
  const std::string tag = "cmdstat_" + command + ":calls=";
  const size_t at = info.find(tag);
  return at == std::string::npos ? 0 : std::stoll(info.substr(at + tag.size()));
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
    int state_reads = 0;
    if constexpr (std::is_same_v<TestType, DefaultBackend>) state_reads = backend.state_reads;
    REQUIRE(bob->Rebase().ok());
    // Bob's head is one he committed: only alice's turns are read.
    if constexpr (std::is_same_v<TestType, DefaultBackend>)
      CHECK(backend.state_reads == state_reads);
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

TEMPLATE_TEST_CASE("store: ReadHeadAfter reads only the turns after a held head it can vouch for",
                   "[store]", RedisBackend, DefaultBackend) {
  TestType backend;
  auto store = backend.Open(StoreOpts(4));
  auto id = backend.Id("acme", "after");
  const int64_t t0 = backend.clock.NowMs();
  LedgerState mine;
  REQUIRE(CommitCall(*store, id, mine, "c1", t0).ok());
  REQUIRE(CommitCall(*store, id, mine, "c2", t0 + 1).ok());
  const LedgerState held = mine;  // version 2, committed at t0 + 1
  LedgerState theirs = mine;
  for (int i = 3; i <= 9; ++i)
    REQUIRE(CommitCall(*store, id, theirs, "c" + std::to_string(i), t0 + i).ok());

  SECTION("caught up: the head, stamped with its last turn") {
    auto read = store->ReadHeadAfter(id, held, t0 + 1);
    REQUIRE(read.has_value());
    CHECK(read->state == theirs);
    CHECK(read->committed_at_ms == t0 + 9);
    // Already at the head: the same state back.
    auto again = store->ReadHeadAfter(id, read->state, read->committed_at_ms);
    REQUIRE(again.has_value());
    CHECK(again->state == theirs);
    CHECK(again->committed_at_ms == t0 + 9);
  }
  SECTION("no stamp, or another one: the whole head") {
    for (int64_t stamp : {int64_t{0}, t0 + 2}) {
      auto read = store->ReadHeadAfter(id, held, stamp);
      REQUIRE(read.has_value());
      CHECK(read->state == theirs);
      CHECK(read->committed_at_ms == WholeStamp<TestType>(t0 + 9));
    }
  }
  SECTION("dropped and written again past the held version: the new conversation, whole") {
    REQUIRE(store->DropConversation(id).ok());
    LedgerState again;
    // Turn 2 has the held turn's stamp but not its calls; the first turn
    // of the old conversation (fact last_call = c1 at turn 1) is gone.
    REQUIRE(CommitCall(*store, id, again, "x1", t0).ok());
    REQUIRE(CommitCall(*store, id, again, "x2", t0 + 1).ok());
    REQUIRE(CommitCall(*store, id, again, "x3", t0 + 3).ok());
    auto read = store->ReadHeadAfter(id, held, t0 + 1);
    REQUIRE(read.has_value());
    CHECK(read->state == again);
    CHECK(read->committed_at_ms == WholeStamp<TestType>(t0 + 3));
  }
  SECTION("dropped and shorter than the held version: the new conversation, whole") {
    REQUIRE(store->DropConversation(id).ok());
    LedgerState again;
    REQUIRE(CommitCall(*store, id, again, "x1", t0).ok());
    auto read = store->ReadHeadAfter(id, held, t0 + 1);
    REQUIRE(read.has_value());
    CHECK(read->state == again);
    CHECK(read->committed_at_ms == WholeStamp<TestType>(t0));
  }
  SECTION("more turns behind than a sixteenth of the held records (at least 64): whole") {
    REQUIRE(internal::CatchUpLimit(held) == 64);
    for (int i = 10; i <= 66; ++i)
      REQUIRE(CommitCall(*store, id, theirs, "c" + std::to_string(i), t0 + i).ok());
    auto read = store->ReadHeadAfter(id, held, t0 + 1);  // 64 behind: caught up
    REQUIRE(read.has_value());
    CHECK(read->state == theirs);
    CHECK(read->committed_at_ms == t0 + 66);
    REQUIRE(CommitCall(*store, id, theirs, "c67", t0 + 67).ok());
    read = store->ReadHeadAfter(id, held, t0 + 1);  // 65 behind
    REQUIRE(read.has_value());
    CHECK(read->state == theirs);
    CHECK(read->committed_at_ms == WholeStamp<TestType>(t0 + 67));
  }
}

TEST_CASE("redis: a rebase reads the other writer's turns in one XRANGE, not the whole head",
          "[redis]") {
  auto server = RedisServer::Start();
  RedisOptions options;
  options.url = server->url();
  options.store = StoreOpts(4);
  auto store = OpenRedisStore(options).value();
  ManualClock clock;
  ConversationId id{"acme", "xrange"};
  auto bob = Ledger::Open(*store, id, clock).value();
  auto alice = Ledger::Open(*store, id, clock).value();
  for (int i = 0; i < 40; ++i) {  // snapshots at 4, 8, ...: a whole read would replay
    REQUIRE(alice->Stage(SetUpdate(Category::kFact, "n" + std::to_string(i), i)).ok());
    clock.Advance(1);
    REQUIRE(alice->Commit().has_value());
  }
  // Bob opened at version 0 (nothing held): his first rebase reads the head
  // whole, with its stamp; after that he catches up.
  REQUIRE(bob->Stage(SetUpdate(Category::kFact, "bob", 1)).ok());
  REQUIRE(bob->Commit().error().code() == StatusCode::kConflict);
  REQUIRE(bob->Rebase().ok());
  for (int i = 0; i < 3; ++i) {
    REQUIRE(alice->Rebase().ok());
    REQUIRE(alice->Stage(SetUpdate(Category::kFact, "alice", i)).ok());
    clock.Advance(1);
    REQUIRE(alice->Commit().has_value());
  }
  REQUIRE(bob->Commit().error().code() == StatusCode::kConflict);
  REQUIRE(server->Run({"CONFIG", "RESETSTAT"}) == "OK");
  REQUIRE(bob->Rebase().ok());
  CHECK(Calls(*server, "xrange") == 1);
  CHECK(Calls(*server, "xrevrange") == 0);
  CHECK(bob->head() == alice->head());
  REQUIRE(bob->Commit().value() == 44);
  CHECK(store->ReadHead(id).value() == bob->head());
}

TEST_CASE("store: a store without history reads the whole head after a held one", "[store]") {
  ManualClock clock;
  ForwardingStore store(NewHeadsOnlyMemoryStore({}, clock));  // Store's default
  ConversationId id{"acme", "heads"};
  LedgerState mine;
  REQUIRE(CommitCall(store, id, mine, "c1", clock.NowMs()).ok());
  const LedgerState held = mine;
  REQUIRE(CommitCall(store, id, mine, "c2", clock.NowMs() + 1).ok());
  auto read = store.ReadHeadAfter(id, held, clock.NowMs());
  REQUIRE(read.has_value());
  CHECK(read->state == mine);
  CHECK(read->committed_at_ms == 0);
}
