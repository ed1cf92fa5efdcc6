// The Ledger (taskledger/ledger/ledger.h) over both stores: staging into the
// working state, commit, atomic batches, conflict then rebase without a lost
// update, and two writers racing from two threads.
#include <catch2/catch.hpp>

#include <thread>

#include "ledger/store_backends.h"
#include "taskledger/ledger/ledger.h"

using namespace taskledger;
using namespace taskledger::testing;

TEMPLATE_TEST_CASE("ledger: staged updates show in working() but not head() until Commit",
                   "[ledger]", MemoryBackend, RedisBackend) {
  TestType backend;
  auto store = backend.Open();
  auto ledger = Ledger::Open(*store, backend.Id("acme", "stage"), backend.clock).value();
  CHECK(ledger->version() == 0);
  CHECK(ledger->turn() == 1);
  uint64_t generation = ledger->generation();
  REQUIRE(ledger->Stage(SetUpdate(Category::kCondition, "user_confirmed", true)).ok());
  CHECK(ledger->generation() != generation);
  CHECK(ledger->staged_updates() == 1);
  CHECK(ledger->working().FindLive(Category::kCondition, "user_confirmed", backend.clock.NowMs()) !=
        nullptr);
  CHECK(ledger->head().of(Category::kCondition).empty());
  CHECK(store->Head(ledger->id()).value() == 0);

  auto committed = ledger->Commit();
  REQUIRE(committed.has_value());
  CHECK(committed.value() == 1);
  CHECK(ledger->head() == ledger->working());
  CHECK(ledger->staged_updates() == 0);
  CHECK(store->ReadHead(ledger->id()).value() == ledger->head());
  CHECK(ledger->head().of(Category::kCondition).at("user_confirmed").provenance.turn == 1);

  // Reopening resumes from the committed head.
  auto reopened = Ledger::Open(*store, backend.Id("acme", "stage"), backend.clock).value();
  CHECK(reopened->head() == ledger->head());
}

TEMPLATE_TEST_CASE("ledger: a batch with one invalid update stages nothing", "[ledger]",
                   MemoryBackend, RedisBackend) {
  TestType backend;
  auto store = backend.Open();
  auto ledger = Ledger::Open(*store, backend.Id("acme", "batch"), backend.clock).value();
  Status s =
      ledger->StageAll({SetUpdate(Category::kFact, "good", 1), SetUpdate(Category::kFact, "", 2)});
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(ledger->staged_updates() == 0);
  CHECK(ledger->working().of(Category::kFact).empty());
  REQUIRE(ledger->Commit().has_value());
  CHECK(store->ReadVersion(ledger->id(), 1).value().of(Category::kFact).empty());
  CHECK(store->ReadTurns(ledger->id(), 1, 1).value().front().updates.empty());
}

TEMPLATE_TEST_CASE("ledger: Conflict keeps the turn staged and Rebase loses no update", "[ledger]",
                   MemoryBackend, RedisBackend) {
  TestType backend;
  auto store = backend.Open();
  auto id = backend.Id("acme", "rebase");
  auto first = Ledger::Open(*store, id, backend.clock).value();
  auto second = Ledger::Open(*store, id, backend.clock).value();
  REQUIRE(first->Stage(SetUpdate(Category::kFact, "refund", "approved")).ok());
  REQUIRE(second->Stage(SetUpdate(Category::kIdentifier, "ticket", "T-9")).ok());
  REQUIRE(first->Commit().has_value());

  auto lost = second->Commit();
  REQUIRE_FALSE(lost.has_value());
  CHECK(lost.error().code() == StatusCode::kConflict);
  CHECK(second->staged_updates() == 1);

  REQUIRE(second->Rebase().ok());
  CHECK(second->version() == 1);
  CHECK(second->working().of(Category::kFact).count("refund") == 1);
  CHECK(second->working().of(Category::kIdentifier).count("ticket") == 1);
  REQUIRE(second->Commit().value() == 2);
  auto head = store->ReadHead(id).value();
  CHECK(head.of(Category::kFact).at("refund").value == "approved");
  CHECK(head.of(Category::kIdentifier).at("ticket").value == "T-9");
  CHECK(head.of(Category::kIdentifier).at("ticket").provenance.turn == 2);
}

TEMPLATE_TEST_CASE("ledger: two writers in two threads, retrying on Conflict, lose nothing",
                   "[ledger][concurrency]", MemoryBackend, RedisBackend) {
  TestType backend;
  auto store = backend.Open(StoreOpts(4));
  auto id = backend.Id("acme", "race");
  constexpr int kTurnsEach = 25;
  std::atomic<int> conflicts{0};
  auto writer = [&](const std::string& name, std::vector<std::string>* errors) {
    auto ledger = Ledger::Open(*store, id, backend.clock);
    if (!ledger) {
      errors->push_back(ledger.error().ToString());
      return;
    }
    for (int i = 1; i <= kTurnsEach; ++i) {
      if (Status s = (*ledger)->Stage(SetUpdate(Category::kFact, name, i)); !s.ok()) {
        errors->push_back(s.ToString());
        return;
      }
      for (;;) {
        auto committed = (*ledger)->Commit();
        if (committed) break;
        if (committed.error().code() != StatusCode::kConflict) {
          errors->push_back(committed.error().ToString());
          return;
        }
        ++conflicts;
        if (Status s = (*ledger)->Rebase(); !s.ok()) {
          errors->push_back(s.ToString());
          return;
        }
      }
    }
  };
  std::vector<std::string> errors_a, errors_b;
  std::thread a(writer, "writer_a", &errors_a);
  std::thread b(writer, "writer_b", &errors_b);
  a.join();
  b.join();
  CHECK(errors_a.empty());
  CHECK(errors_b.empty());
  CHECK(store->Head(id).value() == 2 * kTurnsEach);
  auto head = store->ReadHead(id).value();
  CHECK(head.of(Category::kFact).at("writer_a").value == kTurnsEach);
  CHECK(head.of(Category::kFact).at("writer_b").value == kTurnsEach);
  // Every turn carries exactly one writer's update: none was merged or dropped.
  auto turns = store->ReadTurns(id, 1, 2 * kTurnsEach).value();
  int from_a = 0, from_b = 0;
  for (const TurnRecord& t : turns) {
    REQUIRE(t.updates.size() == 1);
    (t.updates[0].key == "writer_a" ? from_a : from_b)++;
  }
  CHECK(from_a == kTurnsEach);
  CHECK(from_b == kTurnsEach);
  INFO("conflicts resolved by rebase: " << conflicts.load());
}

TEMPLATE_TEST_CASE("ledger: Abandon drops the staged turn; an empty id is refused", "[ledger]",
                   MemoryBackend, RedisBackend) {
  TestType backend;
  auto store = backend.Open();
  auto ledger = Ledger::Open(*store, backend.Id("acme", "abandon"), backend.clock).value();
  REQUIRE(ledger->Stage(SetUpdate(Category::kFact, "x", 1)).ok());
  ledger->Abandon();
  CHECK(ledger->staged_updates() == 0);
  CHECK(ledger->working() == ledger->head());
  CHECK(Ledger::Open(*store, backend.Id("acme", ""), backend.clock).error().code() ==
        StatusCode::kInvalidArgument);
}
