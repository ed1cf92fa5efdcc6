// Write-ahead of environment-changing calls (SessionOptions::commit_before_write)
// and the session's own store denials, over the memory store and a store
// whose commits can be made to fail. What a user notices: the decision that
// let a write through is durable before the write runs; a write whose decision
// cannot be recorded does not run, the model is told why, the user's yes
// survives for the retry, and nothing staged is lost once the store is back.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "session/session_support.h"
#include "support/forwarding_store.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/session/session.h"

using namespace taskledger;
using taskledger::testing::ShopPack;

namespace {

// A memory store whose commits and reads fail with Unavailable while `down`.
class FlakyStore final : public taskledger::testing::ForwardingStore {
 public:
  bool down = false;
  Status CommitTurn(const ConversationId& id, const TurnRecord& turn,
                    const LedgerState& after) override {
    if (down) return Status::Unavailable("store at test:0 refused the connection");
    return ForwardingStore::CommitTurn(id, turn, after);
  }
  Result<uint64_t> Head(const ConversationId& id) override {
    if (down) return Status::Unavailable("store at test:0 refused the connection");
    return ForwardingStore::Head(id);
  }
};

const ConversationId kId{"t", "wa"};

ProposedCall GetOrder(const std::string& order) {
  return {"c_get", "get_order", {{"order_id", order}}};
}
ProposedCall Cancel(const std::string& call_id) {
  return {call_id, "cancel_order", {{"order_id", "#W1"}}};
}

// Counts the cancellations that really ran.
struct Backend {
  int cancels = 0;
  ToolExecutor executor() {
    return [this](const ProposedCall& call) -> Result<ToolOutput> {
      if (call.tool == "get_order") {
        return ToolOutput{{{"order_id", call.arguments["order_id"]}, {"status", "pending"}}, false};
      }
      ++cancels;
      return ToolOutput{{{"order_id", call.arguments["order_id"]}, {"status", "cancelled"}}, false};
    };
  }
};

std::unique_ptr<Session> MustOpen(Store& store, const SessionOptions& options = {}) {
  auto s = Session::Open(store, kId, ShopPack(), options);
  REQUIRE(s.has_value());
  return std::move(s).value();
}

// Turn 1 looks the order up and commits; then the user confirms the
// cancellation (staged in turn 2).
void LookUpAndConfirm(Session& s, Backend& backend) {
  REQUIRE(s.HandleToolCall(GetOrder("#W1"), backend.executor()).executed);
  REQUIRE(s.EndTurn().has_value());
  s.ProposeAction(Cancel("c1"));
  REQUIRE(s.RecordUserMessage("yes").ok());
}

bool HasConfirmation(const LedgerState& state) {
  return state.FindLive(Category::kCondition, "confirmation", 0) != nullptr;
}

}  // namespace

TEST_CASE(
    "write-ahead: the allow decision and the consumed yes are durable before the write runs") {
  auto store = NewMemoryStore();
  auto session = MustOpen(*store);
  Backend backend;
  LookUpAndConfirm(*session, backend);

  // What the store holds at the moment the side effect happens.
  uint64_t head_during_write = 0;
  TurnRecord turn_during_write;
  bool confirmation_during_write = true;
  CallResult r = session->HandleToolCall(Cancel("c1"), [&](const ProposedCall& call) {
    head_during_write = store->Head(kId).value();
    turn_during_write = store->ReadTurns(kId, head_during_write, head_during_write).value()[0];
    confirmation_during_write = HasConfirmation(store->ReadHead(kId).value());
    return backend.executor()(call);
  });
  REQUIRE(r.executed);
  CHECK(backend.cancels == 1);
  CHECK(head_during_write == 2);
  REQUIRE(turn_during_write.decisions.size() == 1);
  CHECK(turn_during_write.decisions[0].call_id == "c1");
  CHECK(turn_during_write.decisions[0].decision == "allow");
  CHECK(turn_during_write.calls.empty());  // its outcome was not known yet
  CHECK_FALSE(confirmation_during_write);

  // The output and the call record land in the next version.
  auto v = session->EndTurn();
  REQUIRE(v.has_value());
  CHECK(*v == 3);
  auto after = store->ReadTurns(kId, 3, 3);
  REQUIRE(after.has_value());
  REQUIRE((*after)[0].calls.size() == 1);
  CHECK((*after)[0].calls[0].call.id == "c1");
  CHECK((*after)[0].calls[0].outcome == "ok");
  CHECK((*after)[0].decisions.empty());
}

TEST_CASE(
    "EndTurn after a write-ahead with nothing new staged writes nothing and returns the version") {
  auto store = NewMemoryStore();
  auto session = MustOpen(*store);
  Backend backend;
  LookUpAndConfirm(*session, backend);
  // A loop that executes calls itself: Authorize writes ahead, and then the
  // loop decides not to run the call after all.
  CallResult r = session->Authorize(Cancel("c1"));
  REQUIRE(r.decision.allowed());
  CHECK(store->Head(kId).value() == 2);
  auto v = session->EndTurn();
  REQUIRE(v.has_value());
  CHECK(*v == 2);
  CHECK(store->Head(kId).value() == 2);
  // Without a write-ahead in the turn, an empty turn is still a turn.
  auto empty = session->EndTurn();
  REQUIRE(empty.has_value());
  CHECK(*empty == 3);
}

TEST_CASE("commit_before_write off: the decision commits together with the output at EndTurn") {
  auto store = NewMemoryStore();
  SessionOptions options;
  options.commit_before_write = false;
  auto session = MustOpen(*store, options);
  Backend backend;
  LookUpAndConfirm(*session, backend);
  uint64_t head_during_write = 99;
  CallResult r = session->HandleToolCall(Cancel("c1"), [&](const ProposedCall& call) {
    head_during_write = store->Head(kId).value();
    return backend.executor()(call);
  });
  REQUIRE(r.executed);
  CHECK(head_during_write == 1);  // nothing of turn 2 was durable yet
  auto v = session->EndTurn();
  REQUIRE(v.has_value());
  CHECK(*v == 2);
  auto turn = store->ReadTurns(kId, 2, 2);
  REQUIRE(turn.has_value());
  CHECK((*turn)[0].decisions.size() == 1);
  CHECK((*turn)[0].calls.size() == 1);
}

TEST_CASE(
    "a write whose decision cannot be recorded does not run, keeps the yes, and is retried later") {
  FlakyStore store;
  auto session = MustOpen(store);
  Backend backend;
  LookUpAndConfirm(*session, backend);

  store.down = true;
  CallResult denied = session->HandleToolCall(Cancel("c1"), backend.executor());
  CHECK_FALSE(denied.executed);
  CHECK(backend.cancels == 0);
  CHECK(denied.decision.outcome == Outcome::kDeny);
  CHECK(denied.decision.rule_id == kStoreUnavailableRule);
  CHECK(denied.message_is_error);
  CHECK_THAT(denied.message, Catch::Contains("task-state store is unreachable") &&
                                 Catch::Contains("refused the connection") &&
                                 Catch::Contains("no change was made") &&
                                 Catch::Contains("try again later"));
  CHECK(denied.decision_record.Rule() == kStoreUnavailableRule);
  // Staged: the policy's allow, the store's denial, the call as denied; the
  // user's yes still stands for the retry.
  const TurnRecord& pending = session->pending();
  REQUIRE(pending.decisions.size() == 2);
  CHECK(pending.decisions[0].decision == "allow");
  CHECK(pending.decisions[1].decision == "deny");
  REQUIRE(pending.calls.size() == 1);
  CHECK(pending.calls[0].outcome == "denied");
  CHECK(HasConfirmation(session->ledger().working()));
  REQUIRE_FALSE(session->EndTurn().has_value());

  // Reads are allowed by default while the store is down...
  CHECK(session->HandleToolCall(GetOrder("#W2"), backend.executor()).executed);
  // ...and denied under StoreDownReads::kDeny.
  SessionOptions strict;
  strict.store_down_reads = StoreDownReads::kDeny;
  store.down = false;
  auto reader = MustOpen(store, strict);
  CHECK(reader->HandleToolCall(GetOrder("#W3"), backend.executor()).executed);
  store.down = true;
  CallResult read = reader->HandleToolCall(GetOrder("#W4"), backend.executor());
  CHECK_FALSE(read.executed);
  CHECK(read.decision.rule_id == kStoreUnavailableRule);
  CHECK_THAT(read.message, Catch::Contains("unreachable"));
  REQUIRE(reader->pending().calls.size() == 2);
  CHECK(reader->pending().calls[1].outcome == "denied");

  // The store is back: the whole turn lands, the denied attempt included,
  // and the retried write runs exactly once on the user's original yes.
  store.down = false;
  auto v = session->EndTurn();
  REQUIRE(v.has_value());
  CHECK(*v == 2);
  auto turn = store.ReadTurns(kId, 2, 2);
  REQUIRE(turn.has_value());
  CHECK((*turn)[0].decisions.size() == 3);  // c1 allow, c1 store denial, the lookup of #W2
  CHECK((*turn)[0].decisions[1].rule == kStoreUnavailableRule);
  CHECK(session->ledger().head().FindLive(Category::kFact, "order.#W2.status", 0) != nullptr);
  CallResult retried = session->HandleToolCall(Cancel("c2"), backend.executor());
  CHECK(retried.executed);
  CHECK(backend.cancels == 1);
  REQUIRE(session->EndTurn().has_value());
  CHECK(session->ledger().version() == 4);  // the write-ahead (3) and its output (4)
}

TEST_CASE("a write-ahead that loses a race to another writer does not run and asks for a rebase") {
  auto store = NewMemoryStore();
  auto session = MustOpen(*store);
  auto other = MustOpen(*store);
  Backend backend;
  LookUpAndConfirm(*session, backend);
  REQUIRE(other->Rebase().ok());
  REQUIRE(other->RecordUserMessage("I am bob@example.com").ok());
  REQUIRE(other->EndTurn().has_value());  // version 2 is the other writer's

  CallResult r = session->HandleToolCall(Cancel("c1"), backend.executor());
  CHECK_FALSE(r.executed);
  CHECK(backend.cancels == 0);
  CHECK(r.decision.rule_id == kStateConflictRule);
  CHECK_THAT(r.message, Catch::Contains("Rebase") && Catch::Contains("checked again"));
  CHECK(HasConfirmation(session->ledger().working()));

  REQUIRE(session->Rebase().ok());
  CallResult retried = session->HandleToolCall(Cancel("c2"), backend.executor());
  CHECK(retried.executed);
  CHECK(backend.cancels == 1);
  auto v = session->EndTurn();
  REQUIRE(v.has_value());
  CHECK(*v == 4);
  // The other writer's turn is kept; this session's attempts followed it.
  auto turns = store->ReadTurns(kId, 2, 4);
  REQUIRE(turns.has_value());
  CHECK((*turns)[0].decisions.empty());
  CHECK((*turns)[1].decisions.size() == 3);  // c1 allow, c1 conflict denial, c2 allow
  CHECK((*turns)[1].decisions[1].rule == kStateConflictRule);
  CHECK((*turns)[2].calls.size() == 1);
}
