// The memory store's CommitTakingTurn (taskledger/ledger/store.h): a record
// handed over reads back exactly as it was built, and a commit that is
// refused (a conflict, a bad version) leaves the caller's record untouched,
// so a rebase and a retry commit the same turn. The heads-only memory store
// (NewHeadsOnlyMemoryStore, for `taskledger replay` without audit output):
// commits and heads as usual, history refused, never answered wrongly.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "taskledger/base/clock.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/ledger/state.h"
#include "taskledger/ledger/store.h"

using namespace taskledger;

namespace {

TurnRecord MakeTurn(uint64_t version) {
  TurnRecord t;
  t.turn = version;
  t.committed_at_ms = 1'700'000'000'000;
  Update u;
  u.category = Category::kFact;
  u.key = "order";
  u.value = {{"id", "#W123"}, {"items", {1, 2, 3}}};
  u.provenance.source = SourceKind::kToolOutput;
  u.provenance.turn = version;
  t.updates.push_back(u);
  t.calls.push_back(
      CallRecord{version, {"c1", "get_order_details", {{"order_id", "#W123"}}}, false, "ok"});
  ExtractionError failed;
  failed.source = "tool";
  failed.code = "execution_failed";
  t.errors.push_back(failed);
  return t;
}

LedgerState After(uint64_t version) {
  LedgerState s;
  s.version = version;
  return s;
}

}  // namespace

TEST_CASE("memory store: a taken turn record reads back as it was built", "[ledger][memory]") {
  auto store = NewMemoryStore();
  ConversationId id{"acme", "taken"};
  TurnRecord turn = MakeTurn(1);
  const TurnRecord expected = turn;
  // Outside REQUIRE: Catch's macro mentions its expression twice.
  const Status first = store->CommitTakingTurn(id, std::move(turn), After(1));
  REQUIRE(first.ok());
  auto turns = store->ReadTurns(id, 1, 1);
  REQUIRE(turns.has_value());
  REQUIRE(turns->size() == 1);
  CHECK(turns->front() == expected);
  CHECK(store->Head(id).value() == 1);

  TurnRecord second = MakeTurn(2);
  const TurnRecord expected_second = second;
  const Status landed = store->CommitTakingTurn(id, std::move(second), After(2));
  REQUIRE(landed.ok());
  auto both = store->ReadTurns(id, 1, 2).value();
  REQUIRE(both.size() == 2);
  CHECK(both[0] == expected);
  CHECK(both[1] == expected_second);
}

TEST_CASE("memory store: a refused taken turn is left to the caller unchanged",
          "[ledger][memory]") {
  auto store = NewMemoryStore();
  ConversationId id{"acme", "refused"};
  REQUIRE(store->CommitTurn(id, MakeTurn(1), After(1)).ok());

  // Built on version 0 again: the head moved, Conflict.
  TurnRecord stale = MakeTurn(1);
  const TurnRecord copy = stale;
  Status s = store->CommitTakingTurn(id, std::move(stale), After(1));
  CHECK(s.code() == StatusCode::kConflict);
  CHECK(stale == copy);  // NOLINT(bugprone-use-after-move): the contract keeps it on failure
  CHECK(store->Head(id).value() == 1);

  // A state that does not carry the turn's version: InvalidArgument.
  TurnRecord mismatched = MakeTurn(2);
  const TurnRecord copy2 = mismatched;
  s = store->CommitTakingTurn(id, std::move(mismatched), After(3));
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(mismatched == copy2);  // NOLINT(bugprone-use-after-move): kept on failure

  // The retry on the right version lands the very same record.
  stale.turn = 2;
  const Status retried = store->CommitTakingTurn(id, std::move(stale), After(2));
  REQUIRE(retried.ok());
  TurnRecord want = copy;
  want.turn = 2;
  CHECK(store->ReadTurns(id, 2, 2).value().front() == want);
  CHECK(store->Head(id).value() == 2);
}

TEST_CASE("heads-only memory store: keeps the head, refuses history with FailedPrecondition",
          "[ledger][memory]") {
  auto store = NewHeadsOnlyMemoryStore();
  ConversationId id{"acme", "heads"};
  CHECK(store->Head(id).value() == 0);
  CHECK(store->ReadTurns(id, 1, 0).value().empty());  // no turn asked for: nothing to refuse
  LedgerState one = After(1);
  REQUIRE(ApplyUpdate(one, MakeTurn(1).updates.front(), 1, 0).ok());
  REQUIRE(store->CommitTurn(id, MakeTurn(1), one).ok());
  LedgerState two = After(2);
  REQUIRE(store->CommitTakingTurn(id, MakeTurn(2), two).ok());
  CHECK(store->Head(id).value() == 2);
  CHECK(store->ReadHead(id).value() == two);
  CHECK(store->ReadVersion(id, 2).value() == two);
  CHECK(store->ReadVersion(id, 0).value() == LedgerState{});
  auto older = store->ReadVersion(id, 1);
  REQUIRE(!older.has_value());
  CHECK(older.error().code() == StatusCode::kFailedPrecondition);
  CHECK(store->ReadVersion(id, 3).error().code() == StatusCode::kNotFound);  // past the head
  CHECK(store->ReadTurns(id, 1, 2).error().code() == StatusCode::kFailedPrecondition);
  CHECK(store->ReadTurns(id, 2, 2).error().code() == StatusCode::kFailedPrecondition);
  // Commits still need the head's version: a stale turn is a Conflict.
  CHECK(store->CommitTurn(id, MakeTurn(2), After(2)).code() == StatusCode::kConflict);
  CHECK(store->ListConversations("acme").value() == std::vector<std::string>{"heads"});
  // The full memory store answers the same history.
  auto full = NewMemoryStore();
  REQUIRE(full->CommitTurn(id, MakeTurn(1), one).ok());
  REQUIRE(full->CommitTurn(id, MakeTurn(2), two).ok());
  CHECK(full->ReadVersion(id, 1).value() == one);
}
