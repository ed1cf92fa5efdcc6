// Replaying traces through a Session: recorded results stand in for tools,
// a blocked call's recorded result is never extracted, the user's yes binds to
// the write that follows it, and the tally scores labeled decisions.
#include <catch2/catch.hpp>

#include "session/session_support.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/session/replay.h"
#include "taskledger/session/replay_tally.h"
#include "taskledger/session/trace.h"

using namespace taskledger;
using taskledger::testing::ShopPack;

namespace {

TraceConversation MustParse(const std::string& line) {
  auto c = ParseTraceLine(line);
  REQUIRE(c.has_value());
  return std::move(c).value();
}

// Look up, confirm, cancel (allowed), then a second cancel without a new yes
// (denied), whose recorded result claims the order is "refunded".
const char* kTrace =
    R"({"conversation":"shop-1","events":[)"
    R"({"type":"call","id":"c0","tool":"get_order","arguments":{"order_id":"#W1"}},)"
    R"({"type":"result","id":"c0","output":{"order_id":"#W1","status":"pending"}},)"
    R"({"type":"user","text":"yes"},)"
    R"({"type":"call","id":"c1","tool":"cancel_order","arguments":{"order_id":"#W1"},"writes":true,"expect":{"decision":"allow"}},)"
    R"({"type":"result","id":"c1","output":{"order_id":"#W1","status":"cancelled"}},)"
    R"({"type":"call","id":"c2","tool":"cancel_order","arguments":{"order_id":"#W1"},"writes":true,)"
    R"("expect":{"decision":"deny","rule":"shop.confirmed"}},)"
    R"({"type":"result","id":"c2","output":{"order_id":"#W1","status":"refunded"}}]})";

}  // namespace

TEST_CASE("a replay gates, executes from the record, and commits a turn per call (a write: two)") {
  auto store = NewMemoryStore();
  auto session = Session::Open(*store, {"t", "shop-1"}, ShopPack());
  REQUIRE(session.has_value());
  auto r = ReplayConversation(**session, MustParse(kTrace));
  REQUIRE(r.has_value());
  CHECK(r->conversation == "shop-1");
  CHECK(r->events == 7);
  REQUIRE(r->calls.size() == 3);
  CHECK(r->calls[0].read_only);
  CHECK(r->calls[1].outcome == Outcome::kAllow);
  CHECK(r->calls[1].executed);
  CHECK(r->calls[1].version_seen == 1);
  CHECK(r->calls[2].outcome == Outcome::kDeny);
  CHECK(r->calls[2].rule_id == "shop.confirmed");
  CHECK_FALSE(r->calls[2].executed);
  // c1 ran: its decision was written ahead as version 2, its outcome is 3.
  CHECK(r->calls[2].version_seen == 3);
  CHECK(r->version == 4);
  // The blocked call's recorded output never reached the ledger.
  auto head = store->ReadHead({"t", "shop-1"});
  REQUIRE(head.has_value());
  const Entry* status = head->FindLive(Category::kFact, "order.#W1.status", 0);
  REQUIRE(status != nullptr);
  CHECK(status->value ==
        "pending");  // cancel_order's outputs are not mapped; "refunded" never seen
  auto turns = store->ReadTurns({"t", "shop-1"}, 2, 2);
  REQUIRE(turns.has_value());
  bool confirmed = false;
  for (const Update& u : (*turns)[0].updates) {
    if (u.category == Category::kCondition && u.key == "confirmation" && u.op == UpdateOp::kSet) {
      CHECK(u.value["action"]["tool"] == "cancel_order");  // bound to the call that followed
      confirmed = true;
    }
  }
  CHECK(confirmed);
}

TEST_CASE("the tally counts expectations and lists every mismatch") {
  auto store = NewMemoryStore();
  ReplayTally tally;
  // As recorded: both labels hold.
  {
    auto session = Session::Open(*store, {"t", "a"}, ShopPack());
    REQUIRE(session.has_value());
    auto r = ReplayConversation(**session, MustParse(kTrace));
    REQUIRE(r.has_value());
    tally.Add(*r);
  }
  // Without the yes, the first cancel is blocked against its label.
  {
    std::string no_yes = kTrace;
    no_yes.replace(no_yes.find(R"({"type":"user","text":"yes"},)"),
                   std::string(R"({"type":"user","text":"yes"},)").size(), "");
    auto session = Session::Open(*store, {"t", "b"}, ShopPack());
    REQUIRE(session.has_value());
    auto r = ReplayConversation(**session, MustParse(no_yes));
    REQUIRE(r.has_value());
    tally.Add(*r);
  }
  CHECK(tally.conversations() == 2);
  CHECK(tally.calls() == 6);
  CHECK(tally.expected_allow() == 2);
  CHECK(tally.allowed_as_expected() == 1);
  CHECK(tally.expected_deny() == 2);
  CHECK(tally.denied_as_expected() == 2);
  CHECK(tally.right_rule() == 2);
  REQUIRE(tally.mismatches().size() == 1);
  CHECK(tally.mismatches()[0].kind == "blocked_but_expected_allow");
  CHECK(tally.mismatches()[0].rule == "shop.confirmed");
  nlohmann::json j = tally.ToJson();
  CHECK(j["by_rule"]["shop.confirmed"]["right_rule"] == 2);
  CHECK(j["mismatches"].size() == 1);
  CHECK(j["decisions"]["deny"] == 3);
}

TEST_CASE("a wrong deciding rule is a mismatch even though the call was blocked") {
  std::string wrong = kTrace;
  wrong.replace(wrong.find("\"rule\":\"shop.confirmed\""), 23, "\"rule\":\"shop.other\"   ");
  auto store = NewMemoryStore();
  auto session = Session::Open(*store, {"t", "w"}, ShopPack());
  REQUIRE(session.has_value());
  auto r = ReplayConversation(**session, MustParse(wrong));
  REQUIRE(r.has_value());
  ReplayTally tally;
  tally.Add(*r);
  CHECK(tally.denied_as_expected() == 1);
  CHECK(tally.right_rule() == 0);
  REQUIRE(tally.mismatches().size() == 1);
  CHECK(tally.mismatches()[0].kind == "wrong_rule");
}

TEST_CASE(
    "a replay that takes the trace's outputs decides and records exactly as one that copies") {
  // c0's result is used by two calls with the same id: the first must not
  // take it from the second.
  std::string shared = kTrace;
  const std::string lookup =
      R"({"type":"call","id":"c0","tool":"get_order","arguments":{"order_id":"#W1"}},)";
  shared.insert(shared.find(R"({"type":"user")"), lookup);
  const TraceConversation kept = MustParse(shared);
  auto store = NewMemoryStore();
  auto copying = Session::Open(*store, {"t", "copy"}, ShopPack());
  auto taking = Session::Open(*store, {"t", "take"}, ShopPack());
  REQUIRE(copying.has_value());
  REQUIRE(taking.has_value());
  auto a = ReplayConversation(**copying, kept);
  TraceConversation handed = kept;
  auto b = ReplayConversation(**taking, std::move(handed));
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  // The copying replay left its trace alone.
  CHECK(EncodeTraceLine(kept) == EncodeTraceLine(MustParse(shared)));
  REQUIRE(a->calls.size() == 4);
  REQUIRE(b->calls.size() == 4);
  for (size_t i = 0; i < a->calls.size(); ++i) {
    CHECK(a->calls[i].call_id == b->calls[i].call_id);
    CHECK(a->calls[i].outcome == b->calls[i].outcome);
    CHECK(a->calls[i].rule_id == b->calls[i].rule_id);
    CHECK(a->calls[i].executed == b->calls[i].executed);
    CHECK(a->calls[i].version_seen == b->calls[i].version_seen);
    CHECK(a->calls[i].recorded_despite_denial == b->calls[i].recorded_despite_denial);
  }
  CHECK(b->calls[1].read_only);
  CHECK(b->calls[1].has_result);
  CHECK(a->version == b->version);
  auto head_a = store->ReadHead({"t", "copy"}).value();
  auto head_b = store->ReadHead({"t", "take"}).value();
  CHECK(head_a.of(Category::kFact) == head_b.of(Category::kFact));
  CHECK(head_a.calls == head_b.calls);
  // Both lookups extracted the recorded output (the second one too).
  auto turns = store->ReadTurns({"t", "take"}, 1, 2).value();
  REQUIRE(turns.size() == 2);
  for (const TurnRecord& t : turns) {
    bool status_seen = false;
    for (const Update& u : t.updates) status_seen = status_seen || u.key == "order.#W1.status";
    CHECK(status_seen);
  }
}
