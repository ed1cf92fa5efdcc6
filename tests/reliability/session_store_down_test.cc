// Sessions gating tool calls while their Redis is down, frozen or cut off
// (ctest label `fault`): the write-ahead of environment-changing calls
// (SessionOptions::commit_before_write) and StoreDownReads. What must hold: a
// write whose decision cannot be made durable never runs and the model is
// told so (rule taskledger.store_unavailable); reads run or are denied as
// configured; no gated call waits on a hung Redis past the command timeout;
// and once Redis is back the same session commits everything it staged, the
// denied attempt included, and the user's confirmation still covers the retry.
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <string>

#include "reliability/fault_proxy.h"
#include "reliability/workload.h"
#include "session/session_support.h"
#include "support/redis_server.h"
#include "taskledger/ledger/codec.h"

using namespace taskledger;
using namespace taskledger::testing;
using namespace std::chrono_literals;
using Clock_ = std::chrono::steady_clock;

namespace {

ProposedCall GetOrder(const std::string& order) {
  return {"g" + order, "get_order", {{"order_id", order}}};
}
ProposedCall Cancel(const std::string& call_id) {
  return {call_id, "cancel_order", {{"order_id", "#W1"}}};
}

// The shop's tools; counts what really ran.
struct Backend {
  int reads = 0;
  int cancels = 0;
  ToolExecutor executor() {
    return [this](const ProposedCall& call) -> Result<ToolOutput> {
      if (call.tool == "get_order") {
        ++reads;
        return ToolOutput{{{"order_id", call.arguments["order_id"]}, {"status", "pending"}}, false};
      }
      ++cancels;
      return ToolOutput{{{"order_id", call.arguments["order_id"]}, {"status", "cancelled"}}, false};
    };
  }
};

std::unique_ptr<Session> MustOpen(Store& store, const ConversationId& id,
                                  const SessionOptions& options = {}) {
  auto s = Session::Open(store, id, ShopPack(), options);
  REQUIRE(s.has_value());
  return std::move(s).value();
}

// Version 1: the order looked up. Then the user confirms its cancellation
// (staged in turn 2).
void LookUpAndConfirm(Session& s, Backend& backend) {
  REQUIRE(s.HandleToolCall(GetOrder("#W1"), backend.executor()).executed);
  auto v = s.EndTurn();
  REQUIRE(v.has_value());
  REQUIRE(*v == 1);
  s.ProposeAction(Cancel("c1"));
  REQUIRE(s.RecordUserMessage("yes").ok());
}

int64_t MillisSince(Clock_::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock_::now() - start).count();
}

// EndTurn until it lands: retried while the store is still coming back, and
// after a Rebase if a write-ahead commit that timed out had landed after all
// (the retry then carries more records than the landed attempt, so the store
// cannot recognise it as the same commit).
Result<uint64_t> EndTurnOnceBack(Session& s) {
  const auto deadline = Clock_::now() + 10s;
  while (true) {
    auto v = s.EndTurn();
    if (v.has_value() || Clock_::now() > deadline) return v;
    if (v.error().code() == StatusCode::kConflict) {
      if (Status r = s.Rebase(); !r.ok() && !StoreDown(r)) return r;
    } else if (!StoreDown(v.error())) {
      return v;
    }
  }
}

// Every decision record of `call_id` committed to `id`, in order.
std::vector<nlohmann::json> CommittedDecisions(Store& store, const ConversationId& id,
                                               const std::string& call_id) {
  std::vector<nlohmann::json> out;
  auto head = store.Head(id);
  REQUIRE(head.has_value());
  auto turns = store.ReadTurns(id, 1, head.value());
  REQUIRE(turns.has_value());
  for (const TurnRecord& t : turns.value()) {
    for (const DecisionRecord& d : t.decisions) {
      if (d.call_id == call_id) out.push_back(EncodeDecision(d));
    }
  }
  return out;
}

bool HasConfirmation(const LedgerState& state) {
  return state.FindLive(Category::kCondition, "confirmation", 0) != nullptr;
}

// A write gated while the store hangs (`hang`) must come back denied within
// the command timeout; after `recover` the session commits everything.
// REQUIRES: `store` was opened with a 200 ms command timeout.
void CheckWriteAgainstHungStore(Store& store, const ConversationId& id,
                                const std::function<void()>& hang,
                                const std::function<void()>& recover) {
  constexpr auto kTimeout = 200ms;
  Backend backend;
  auto session = MustOpen(store, id);
  LookUpAndConfirm(*session, backend);

  hang();
  auto start = Clock_::now();
  CallResult denied = session->HandleToolCall(Cancel("c1"), backend.executor());
  const int64_t ms = MillisSince(start);
  CHECK_FALSE(denied.executed);
  CHECK(backend.cancels == 0);
  CHECK(denied.decision.rule_id == kStoreUnavailableRule);
  CHECK_THAT(denied.message, Catch::Contains("unreachable") && Catch::Contains("try again later"));
  // A bound on a hang, not a performance figure: the commit gives up after
  // the 200 ms command timeout (a reconnect attempt may add one more).
  INFO("the write was denied after " << ms << " ms (command timeout " << kTimeout.count()
                                     << " ms)");
  CHECK(ms < 2000);
  CHECK(HasConfirmation(session->ledger().working()));

  recover();
  auto v = EndTurnOnceBack(*session);
  REQUIRE(v.has_value());
  // The denied attempt is on record: the policy's allow, then the store's deny.
  auto decisions = CommittedDecisions(store, id, "c1");
  REQUIRE(decisions.size() >= 2);
  CHECK(decisions.front()["decision"] == "allow");
  CHECK(decisions.back()["rule"] == kStoreUnavailableRule);
  CHECK(HasConfirmation(session->ledger().head()));
  // The user's yes still covers the retry, which runs once.
  CallResult retried = session->HandleToolCall(Cancel("c2"), backend.executor());
  CHECK(retried.executed);
  CHECK(backend.cancels == 1);
  REQUIRE(EndTurnOnceBack(*session).has_value());
  // A process that opens the conversation now sees the cancellation done
  // and the yes used up.
  auto reopened = MustOpen(store, id);
  const LedgerState& head = reopened->ledger().head();
  REQUIRE_FALSE(head.calls.empty());
  CHECK(head.calls.back().call.id == "c2");
  CHECK(head.calls.back().outcome == "ok");
  CHECK_FALSE(HasConfirmation(head));
}

}  // namespace

TEST_CASE("fault: with Redis down a write is denied and never runs, reads behave as configured",
          "[reliability][fault]") {
  auto server = RedisServer::Start();
  auto store = MustOpenStore(server->url(), 300ms);
  const ConversationId id{"down", "writes"};
  const ConversationId strict_id{"down", "strict-reads"};
  Backend backend;
  auto session = MustOpen(*store, id);  // defaults: write-ahead, reads allowed
  SessionOptions strict_options;
  strict_options.store_down_reads = StoreDownReads::kDeny;
  auto strict = MustOpen(*store, strict_id, strict_options);
  LookUpAndConfirm(*session, backend);
  REQUIRE(strict->HandleToolCall(GetOrder("#W7"), backend.executor()).executed);  // Redis is up
  REQUIRE(backend.reads == 2);

  server->Kill9();
  auto start = Clock_::now();
  CallResult denied = session->HandleToolCall(Cancel("c1"), backend.executor());
  CHECK(MillisSince(start) < 1500);
  CHECK_FALSE(denied.executed);
  CHECK(backend.cancels == 0);
  CHECK(denied.decision.outcome == Outcome::kDeny);
  CHECK(denied.decision.rule_id == kStoreUnavailableRule);
  CHECK(denied.message_is_error);
  CHECK_THAT(denied.message, Catch::Contains("task-state store is unreachable") &&
                                 Catch::Contains("no change was made") &&
                                 Catch::Contains("try again later"));
  // Asked again while Redis stays down: denied again, still never run.
  CHECK(session->HandleToolCall(Cancel("c1b"), backend.executor()).decision.rule_id ==
        kStoreUnavailableRule);
  CHECK(backend.cancels == 0);

  // Reads: allowed by default (their facts stay staged), denied under kDeny.
  CallResult read = session->HandleToolCall(GetOrder("#W2"), backend.executor());
  CHECK(read.executed);
  CHECK(backend.reads == 3);
  start = Clock_::now();
  CallResult strict_read = strict->HandleToolCall(GetOrder("#W8"), backend.executor());
  CHECK(MillisSince(start) < 1500);
  CHECK_FALSE(strict_read.executed);
  CHECK(backend.reads == 3);
  CHECK(strict_read.decision.rule_id == kStoreUnavailableRule);
  CHECK_THAT(strict_read.message, Catch::Contains("unreachable"));

  // Redis is back: one EndTurn commits the whole staged turn, the denied
  // attempts included; the reader reads again.
  server->Restart();
  auto v = session->EndTurn();
  REQUIRE(v.has_value());
  CHECK(*v == 2);
  auto fresh = MustOpenStore(server->url());
  auto turn = fresh->ReadTurns(id, 2, 2);
  REQUIRE(turn.has_value());
  const TurnRecord& t = turn.value()[0];
  REQUIRE(t.decisions.size() == 5);  // c1 allow + deny, c1b allow + deny, the read
  CHECK(t.decisions[0].call_id == "c1");
  CHECK(t.decisions[0].decision == "allow");
  CHECK(t.decisions[1].rule == kStoreUnavailableRule);
  REQUIRE(t.calls.size() == 3);
  CHECK(t.calls[0].call.id == "c1");
  CHECK(t.calls[0].outcome == "denied");
  CHECK(t.calls[2].outcome == "ok");
  auto head = fresh->ReadHead(id);
  REQUIRE(head.has_value());
  CHECK(head->FindLive(Category::kFact, "order.#W2.status", 0) != nullptr);
  CHECK(HasConfirmation(head.value()));
  CHECK(strict->HandleToolCall(GetOrder("#W8"), backend.executor()).executed);
  REQUIRE(strict->EndTurn().has_value());

  // The retry runs once, on the user's original yes.
  CallResult retried = session->HandleToolCall(Cancel("c2"), backend.executor());
  CHECK(retried.executed);
  CHECK(backend.cancels == 1);
  auto done = session->EndTurn();
  REQUIRE(done.has_value());
  CHECK(*done == 4);  // 3: the write-ahead commit; 4: the cancellation's outcome
}

TEST_CASE(
    "fault: a frozen redis-server (SIGSTOP) never holds a write past the timeout, and nothing is "
    "lost",
    "[reliability][fault]") {
  auto server = RedisServer::Start();
  auto store = MustOpenStore(server->url(), 200ms);
  // The commit the client gave up on sits in the frozen server's socket
  // buffer and runs when it is thawed: the ambiguous case.
  CheckWriteAgainstHungStore(
      *store, {"frozen", "c"}, [&] { server->Freeze(); }, [&] { server->Thaw(); });
}

TEST_CASE(
    "fault: a stalled link to Redis never holds a write past the timeout, and nothing is lost",
    "[reliability][fault]") {
  auto server = RedisServer::Start();
  auto proxy = FaultProxy::Start(server->port());
  auto store = MustOpenStore(proxy->url(), 200ms);
  // Here the held commit never reaches the server.
  CheckWriteAgainstHungStore(
      *store, {"stalled", "c"}, [&] { proxy->SetMode(FaultProxy::Mode::kStall); },
      [&] { proxy->SetMode(FaultProxy::Mode::kPass); });
}
