// Session: the agent loop a user wires around a model. What a user notices:
// denied calls never run and come back as an explanation, allowed calls run
// and what they return is remembered, a "yes" covers one write, everything is
// in the committed turn record (a write's decision before the write runs), and
// a reopened session continues where the last process stopped, with either
// store. tests/session/write_ahead_test.cc covers write-ahead in detail.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <memory>
#include <string>
#include <vector>

#include "session/session_support.h"
#include "support/redis_server.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/ledger/redis_store.h"
#include "taskledger/session/session.h"

using namespace taskledger;
using taskledger::testing::ShopPack;

namespace {

// A tool backend that counts calls and returns canned outputs.
struct FakeTools {
  int calls = 0;
  ToolExecutor executor() {
    return [this](const ProposedCall& call) -> Result<ToolOutput> {
      ++calls;
      if (call.tool == "get_order") {
        return ToolOutput{{{"order_id", call.arguments["order_id"]}, {"status", status}}, false};
      }
      return ToolOutput{{{"order_id", call.arguments["order_id"]}, {"status", "cancelled"}}, false};
    };
  }
  std::string status = "pending";
};

ProposedCall GetOrder(const std::string& id) { return {"c_get", "get_order", {{"order_id", id}}}; }
ProposedCall Cancel(const std::string& id, const std::string& call_id = "c_cancel") {
  return {call_id, "cancel_order", {{"order_id", id}}};
}

std::unique_ptr<Session> MustOpen(Store& store, const std::string& conversation) {
  auto s = Session::Open(store, ConversationId{"t", conversation}, ShopPack());
  REQUIRE(s.has_value());
  return std::move(s).value();
}

}  // namespace

TEST_CASE("a denied call does not run and the model is told which rule and why") {
  auto store = NewMemoryStore();
  auto session = MustOpen(*store, "deny");
  FakeTools tools;
  CallResult r = session->HandleToolCall(Cancel("#W1"), tools.executor());
  CHECK_FALSE(r.executed);
  CHECK(tools.calls == 0);
  CHECK(r.decision.outcome == Outcome::kDeny);
  CHECK(r.decision.rule_id == "shop.pending_only");
  CHECK(r.message_is_error);
  CHECK_THAT(r.message, Catch::Contains("shop.pending_only") &&
                            Catch::Contains("status of order #W1 is unknown") &&
                            Catch::Contains("no change"));
  auto v = session->EndTurn();
  REQUIRE(v.has_value());
  CHECK(*v == 1);
  auto turns = store->ReadTurns({"t", "deny"}, 1, 1);
  REQUIRE(turns.has_value());
  REQUIRE((*turns)[0].calls.size() == 1);
  CHECK((*turns)[0].calls[0].outcome == "denied");
  CHECK((*turns)[0].calls[0].writes);
  REQUIRE((*turns)[0].decisions.size() == 1);
  CHECK((*turns)[0].decisions[0].decision == "deny");
  CHECK((*turns)[0].decisions[0].rule == "shop.pending_only");
  CHECK((*turns)[0].decisions[0].version_seen == 0);
}

TEST_CASE("a denial ends with the pack's denial_hint, or a hint that fits any domain") {
  auto store = NewMemoryStore();
  FakeTools tools;
  // The shop pack has no denial_hint: the default names no domain's chores.
  CallResult plain =
      MustOpen(*store, "hint-default")->HandleToolCall(Cancel("#W1"), tools.executor());
  CHECK_THAT(plain.message,
             Catch::EndsWith(std::string(kDefaultDenialHint)) && !Catch::Contains("identity"));

  std::vector<PackFile> files;
  for (const auto& [path, text] : taskledger::testing::ShopPackFiles()) {
    std::string contents = text;
    if (path == "pack.json") {
      contents.insert(contents.rfind('}'),
                      R"(, "denial_hint": "Check the order's status with get_order first.")");
    }
    files.push_back({path, contents});
  }
  auto pack = RulePack::FromFiles(files);
  REQUIRE(pack.has_value());
  CHECK((*pack)->denial_hint() == "Check the order's status with get_order first.");
  auto session = Session::Open(*store, ConversationId{"t", "hint-pack"}, *pack);
  REQUIRE(session.has_value());
  CallResult r = (*session)->HandleToolCall(Cancel("#W1"), tools.executor());
  CHECK_THAT(r.message, Catch::Contains("shop.pending_only") &&
                            Catch::EndsWith("is unknown. Check the order's status with get_order "
                                            "first."));
  CHECK(tools.calls == 0);

  // A hint that is not a non-empty string of at most 1000 bytes refuses the pack.
  for (const std::string& bad :
       std::vector<std::string>{R"(, "denial_hint": 7)", R"(, "denial_hint": "")",
                                R"(, "denial_hint": ")" + std::string(1001, 'x') + "\""}) {
    std::vector<PackFile> broken = files;
    for (PackFile& f : broken) {
      if (f.path != "pack.json") continue;
      f.contents = taskledger::testing::ShopPackFiles()[0].second;
      f.contents.insert(f.contents.rfind('}'), bad);
    }
    auto refused = RulePack::FromFiles(broken);
    REQUIRE_FALSE(refused.has_value());
    CHECK_THAT(refused.error().message(), Catch::Contains("denial_hint"));
  }
}

TEST_CASE("lookup, confirmation and write: the write runs once and consumes the yes") {
  auto store = NewMemoryStore();
  auto session = MustOpen(*store, "flow");
  FakeTools tools;
  // Turn 1: a read-only lookup passes without rules; its output is extracted.
  CallResult lookup = session->HandleToolCall(GetOrder("#W1"), tools.executor());
  CHECK(lookup.executed);
  CHECK(lookup.decision.read_only());
  CHECK_THAT(lookup.message, Catch::Contains("pending"));
  REQUIRE(session->EndTurn().has_value());
  const Entry* status = session->ledger().head().FindLive(Category::kFact, "order.#W1.status", 0);
  REQUIRE(status != nullptr);
  CHECK(status->value == "pending");
  CHECK(status->provenance.verified);

  // Turn 2: without a yes the cancellation is denied by the confirmation rule.
  CallResult early = session->HandleToolCall(Cancel("#W1", "c1"), tools.executor());
  CHECK_FALSE(early.executed);
  CHECK(early.decision.rule_id == "shop.confirmed");
  REQUIRE(session->EndTurn().has_value());

  // Turn 3: the agent proposes the action, the user says yes, the call runs.
  session->ProposeAction(Cancel("#W1", "c2"));
  REQUIRE(session->RecordUserMessage("yes").ok());
  const Entry* confirmation =
      session->ledger().working().FindLive(Category::kCondition, "confirmation", 0);
  REQUIRE(confirmation != nullptr);
  CHECK(confirmation->value["action"]["tool"] == "cancel_order");
  CHECK_FALSE(confirmation->provenance.verified);
  CHECK_FALSE(session->proposed_action().has_value());
  CallResult done = session->HandleToolCall(Cancel("#W1", "c2"), tools.executor());
  CHECK(done.executed);
  CHECK(done.decision.allowed());
  CHECK(tools.calls == 2);  // the lookup and this cancellation
  CHECK(session->ledger().working().FindLive(Category::kCondition, "confirmation", 0) == nullptr);
  REQUIRE(session->EndTurn().has_value());

  // Turn 4: the same yes does not cover a second write.
  CallResult again = session->HandleToolCall(Cancel("#W1", "c3"), tools.executor());
  CHECK_FALSE(again.executed);
  CHECK(again.decision.rule_id == "shop.confirmed");
  CHECK(tools.calls == 2);
  auto v = session->EndTurn();
  REQUIRE(v.has_value());
  CHECK(*v == 5);

  // Turn 3 spans two versions: the write-ahead commit (the yes, the allow
  // decision, the yes consumed) made before the cancellation ran, then its
  // outcome.
  auto turns = store->ReadTurns({"t", "flow"}, 3, 4);
  REQUIRE(turns.has_value());
  REQUIRE((*turns)[0].decisions.size() == 1);
  CHECK((*turns)[0].decisions[0].call_id == "c2");
  CHECK((*turns)[0].decisions[0].decision == "allow");
  CHECK((*turns)[0].calls.empty());
  REQUIRE((*turns)[1].calls.size() == 1);
  CHECK((*turns)[1].calls[0].outcome == "ok");
  CHECK((*turns)[1].calls[0].call.tool == "cancel_order");
}

TEST_CASE("a tool that cannot be reached is recorded as an error, not as success") {
  auto store = NewMemoryStore();
  auto session = MustOpen(*store, "unreachable");
  CallResult r =
      session->HandleToolCall(GetOrder("#W9"), [](const ProposedCall&) -> Result<ToolOutput> {
        return Status::Unavailable("connection refused");
      });
  CHECK(r.executed);
  CHECK(r.message_is_error);
  CHECK_THAT(r.message, Catch::Contains("connection refused"));
  REQUIRE(session->pending().calls.size() == 1);
  CHECK(session->pending().calls[0].outcome == "error");
  CHECK_FALSE(session->pending().errors.empty());
}

TEST_CASE("a malformed tool output is staged as an extraction error and changes nothing") {
  auto store = NewMemoryStore();
  auto session = MustOpen(*store, "malformed");
  CallResult r =
      session->HandleToolCall(GetOrder("#W2"), [](const ProposedCall&) -> Result<ToolOutput> {
        return ToolOutput{"{\"status\": \"pending\"", false};  // truncated JSON text
      });
  CHECK(r.executed);
  REQUIRE(session->EndTurn().has_value());
  CHECK(session->ledger().head().of(Category::kFact).empty());
  auto turns = store->ReadTurns({"t", "malformed"}, 1, 1);
  REQUIRE(turns.has_value());
  REQUIRE_FALSE((*turns)[0].errors.empty());
  CHECK((*turns)[0].errors[0].code == "malformed_json");
}

TEST_CASE("an unknown tool is denied by the pack's unknown_tools setting") {
  auto store = NewMemoryStore();
  auto session = MustOpen(*store, "unknown");
  FakeTools tools;
  CallResult r = session->HandleToolCall({"c0", "drop_database", {}}, tools.executor());
  CHECK_FALSE(r.executed);
  CHECK(tools.calls == 0);
  CHECK(r.decision.outcome == Outcome::kDeny);
}

TEST_CASE("a session reopened after a restart continues from the last committed version") {
  auto store = NewMemoryStore();
  FakeTools tools;
  {
    auto first = MustOpen(*store, "restart");
    first->HandleToolCall(GetOrder("#W3"), tools.executor());
    REQUIRE(first->EndTurn().has_value());
    REQUIRE(first->RecordUserMessage("I am ann@example.com").ok());
    REQUIRE(first->EndTurn().has_value());
    // A staged but uncommitted turn is lost with the process.
    REQUIRE(first->RecordUserMessage("yes").ok());
  }
  auto second = MustOpen(*store, "restart");
  CHECK(second->ledger().version() == 2);
  CHECK(second->ledger().working().FindLive(Category::kFact, "order.#W3.status", 0) != nullptr);
  const Entry* email = second->ledger().working().FindLive(Category::kIdentifier, "email", 0);
  REQUIRE(email != nullptr);
  CHECK_FALSE(email->provenance.verified);
  CHECK(second->ledger().working().FindLive(Category::kCondition, "confirmation", 0) == nullptr);
  auto v = second->EndTurn();
  REQUIRE(v.has_value());
  CHECK(*v == 3);
}

TEST_CASE("a second writer on the same conversation makes EndTurn report a conflict") {
  auto store = NewMemoryStore();
  auto a = MustOpen(*store, "race");
  auto b = MustOpen(*store, "race");
  REQUIRE(a->RecordUserMessage("a@example.com").ok());
  REQUIRE(b->RecordUserMessage("b@example.com").ok());
  REQUIRE(a->EndTurn().has_value());
  auto lost = b->EndTurn();
  REQUIRE_FALSE(lost.has_value());
  CHECK(lost.error().code() == StatusCode::kConflict);
  REQUIRE(b->Rebase().ok());
  auto v = b->EndTurn();
  REQUIRE(v.has_value());
  CHECK(*v == 2);
}

TEST_CASE("sessions over Redis keep their state across processes", "[redis]") {
  auto url = taskledger::testing::SharedRedisUrl();
  auto store = OpenStore(url);
  REQUIRE(store.has_value());
  const std::string conversation = "redis-" + std::to_string(::getpid());
  FakeTools tools;
  {
    auto s = MustOpen(**store, conversation);
    s->HandleToolCall(GetOrder("#W4"), tools.executor());
    REQUIRE(s->EndTurn().has_value());
    s->ProposeAction(Cancel("#W4"));
    REQUIRE(s->RecordUserMessage("yes").ok());
    REQUIRE(s->EndTurn().has_value());
  }
  auto other_store = OpenStore(url);  // a new connection, as another process would have
  REQUIRE(other_store.has_value());
  auto s = MustOpen(**other_store, conversation);
  CHECK(s->ledger().version() == 2);
  CallResult r = s->HandleToolCall(Cancel("#W4"), tools.executor());
  CHECK(r.executed);
  CHECK(s->ledger().version() == 3);  // the decision was written ahead of the call
  auto v = s->EndTurn();
  REQUIRE(v.has_value());
  CHECK(*v == 4);
  CHECK((*other_store)->DropConversation({"t", conversation}).ok());
}

namespace {

// One lookup, a denied write, a yes and the write: each call's result and
// last_decision() right after it, and every committed turn.
struct Run {
  std::vector<CallResult> results;
  std::vector<nlohmann::json> last;
  std::vector<TurnRecord> turns;
};

Run RunFlow(bool call_result_texts) {
  auto store = NewMemoryStore();
  ManualClock clock(1'000);
  SessionOptions options;
  options.clock = &clock;
  options.call_result_texts = call_result_texts;
  auto opened = Session::Open(*store, ConversationId{"t", "texts"}, ShopPack(), options);
  REQUIRE(opened.has_value());
  Session& s = **opened;
  FakeTools tools;
  Run run;
  auto handle = [&](const ProposedCall& call) {
    run.results.push_back(s.HandleToolCall(call, tools.executor()));
    run.last.push_back(s.last_decision());
    REQUIRE(s.EndTurn().has_value());
  };
  handle(GetOrder("#W1"));
  handle(Cancel("#W1", "c1"));
  s.ProposeAction(Cancel("#W1", "c2"));
  REQUIRE(s.RecordUserMessage("yes").ok());
  handle(Cancel("#W1", "c2"));
  auto turns = store->ReadTurns({"t", "texts"}, 1, s.ledger().version());
  REQUIRE(turns.has_value());
  run.turns = std::move(turns).value();
  for (TurnRecord& t : run.turns) {
    for (DecisionRecord& d : t.decisions) d.latency_us = 0;  // the one field that varies
  }
  for (nlohmann::json& j : run.last) j.erase("latency_us");
  return run;
}

}  // namespace

TEST_CASE("a session without call result texts records and decides exactly as one with them") {
  const Run with = RunFlow(true);
  const Run without = RunFlow(false);
  REQUIRE(with.results.size() == 3);
  REQUIRE(without.results.size() == 3);
  CHECK(with.turns == without.turns);
  CHECK(with.last == without.last);
  for (size_t i = 0; i < 3; ++i) {
    const CallResult& a = with.results[i];
    const CallResult& b = without.results[i];
    CHECK(a.decision.outcome == b.decision.outcome);
    CHECK(a.decision.rule_id == b.decision.rule_id);
    CHECK(a.executed == b.executed);
    CHECK(a.message_is_error == b.message_is_error);
    // Both carry the record as staged (and as last_decision() gives it): the
    // texts option only decides the output's text.
    nlohmann::json record = a.decision_record.Json();
    record.erase("latency_us");
    CHECK(record == with.last[i]);
    CHECK(record["call_id"] == (i == 0 ? "c_get" : i == 1 ? "c1" : "c2"));
    CHECK(a.decision_record.CallId() == record["call_id"]);
    nlohmann::json record_without = b.decision_record.Json();
    record_without.erase("latency_us");
    CHECK(record_without == record);
    // Without: no text for a call that ran; a denial still explains itself.
    if (a.executed) {
      CHECK_THAT(a.message, Catch::Contains("order_id"));
      CHECK(b.message.empty());
    } else {
      CHECK(b.message == a.message);
    }
  }
  CHECK(with.results[1].decision.rule_id == "shop.confirmed");
  CHECK(with.results[2].executed);
}
