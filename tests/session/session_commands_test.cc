// Session writes through the command ledger (SessionOptions::commands), on the
// memory and the Redis command store. What a user notices: a write runs once,
// with an idempotency key the tool sees, and its record names the decision
// that allowed it; the model retrying the same call gets the recorded outcome;
// a tool that throws is an uncertain outcome, never an exception out of the
// loop; a restarted session reconciles what its predecessor left in flight;
// an approval flows from the rule to an operator and back to one execution,
// and a denial reaches the model.
#include <catch2/catch.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "session/command_session_support.h"
#include "session/confirmed_write_support.h"
#include "session/session_support.h"
#include "taskledger/commands/command_ledger.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/session/session.h"

using namespace taskledger;
using namespace taskledger::testing;

TEST_CASE("session commands: an allowed write is a command with its decision and key") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  auto session = f.Open();
  Backend backend;
  CallResult r = session->HandleToolCall(Ship("c1"), backend.executor());
  REQUIRE(r.executed);
  REQUIRE(r.command.has_value());
  CHECK(r.command->state == CommandState::kSucceeded);
  CHECK(r.command->call.id == "c1");
  REQUIRE(session->Flush().ok());  // the settle's answer read: any handle sees it
  Command stored = f.Only();
  CHECK(stored.state == CommandState::kSucceeded);
  // The tool saw the key the record holds, and the record names its call
  // and its decision.
  REQUIRE(backend.keys.size() == 1);
  CHECK(backend.keys[0] == stored.idempotency_key);
  CHECK_FALSE(stored.idempotency_key.empty());
  CHECK(stored.call.id == "c1");
  CHECK(stored.decision.CallId() == "c1");
  CHECK(stored.decision.Verdict() == "allow");
  CHECK(stored.evidence["output"]["ok"] == true);
  CHECK(stored.pack_version == session->pack().version());
  REQUIRE(Calls(*session).size() == 1);
  CHECK(Calls(*session)[0].outcome == "ok");
  REQUIRE(session->EndTurn().has_value());
  // The command keeps the very record the turn committed, member for member
  // (the typed record the session staged, not a second encoding of it).
  auto turns = f.ledger_store->ReadTurns(f.conv, 1, session->ledger().version());
  REQUIRE(turns.has_value());
  std::vector<DecisionRecord> committed;
  for (const TurnRecord& t : *turns) {
    for (const DecisionRecord& d : t.decisions) {
      if (d.call_id == "c1") committed.push_back(d);
    }
  }
  REQUIRE(committed.size() == 1);
  CHECK(stored.decision.Json() == EncodeDecision(committed[0]));
  CHECK(stored.decision.Json() == session->last_decision());
}

TEST_CASE("session commands: the same call proposed again returns the recorded outcome") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  auto session = f.Open();
  Backend backend;
  CallResult first = session->HandleToolCall(Ship("c1"), backend.executor());
  REQUIRE(first.executed);
  REQUIRE(session->EndTurn().has_value());
  CallResult again = session->HandleToolCall(Ship("c2"), backend.executor());
  CHECK_FALSE(again.executed);
  CHECK(backend.keys.size() == 1);
  CHECK_FALSE(again.message_is_error);
  CHECK_THAT(again.message, Catch::Contains("Already done") && Catch::Contains("ext-1"));
  REQUIRE(again.output.has_value());
  CHECK(again.output->output == first.output->output);
  CHECK(Calls(*session).back().outcome == "deduplicated");
  // Other arguments are another command.
  CHECK(session->HandleToolCall(Refund("c3", 5), backend.executor()).executed);
  CHECK(backend.keys.size() == 2);
  CHECK(backend.keys[1] != backend.keys[0]);
}

TEST_CASE("session commands: a throwing tool is uncertain, reconciled, and retried with its key") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  int lookups = 0;
  auto session = f.Open([&](const Command&) {
    ++lookups;
    return LookupResult::NotFound();
  });
  Backend backend;
  backend.throw_next = true;
  CallResult r;
  REQUIRE_NOTHROW(r = session->HandleToolCall(Ship("c1"), backend.executor()));
  CHECK(r.executed);
  CHECK(r.message_is_error);
  CHECK_THAT(r.message, Catch::Contains("unknown") && Catch::Contains("connection reset"));
  CHECK(Calls(*session).back().outcome == "uncertain");
  CHECK(session->pending().errors.back().code == "outcome_uncertain");
  // Settled uncertain, then reconciled at once: not found, so released.
  CHECK(lookups == 1);
  CHECK(f.Only().state == CommandState::kPending);
  CHECK(f.Only().attempts == 1);
  // The model retries: the same command runs again under the same key.
  CallResult retried = session->HandleToolCall(Ship("c2"), backend.executor());
  CHECK(retried.executed);
  REQUIRE(backend.keys.size() == 2);
  CHECK(backend.keys[0] == backend.keys[1]);
  REQUIRE(session->Flush().ok());  // its settle's answer read: any connection sees it
  CHECK(f.Only().state == CommandState::kSucceeded);
  CHECK(f.Only().attempts == 2);
}

TEST_CASE("session commands: without a lookup an uncertain write goes to an operator") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  auto session = f.Open();
  Backend backend;
  backend.throw_next = true;
  CallResult r = session->HandleToolCall(Ship("c1"), backend.executor());
  CHECK(r.executed);
  Command c = f.Only();
  CHECK(c.state == CommandState::kBlocked);
  CHECK(c.escalated);
  CallResult again = session->HandleToolCall(Ship("c2"), backend.executor());
  CHECK_FALSE(again.executed);
  CHECK(backend.keys.size() == 1);
  CHECK_THAT(again.message, Catch::Contains("waits for an operator"));
  CHECK(Calls(*session).back().outcome == "escalated");
}

TEST_CASE("session: a throwing executor never escapes, and a write it ran is uncertain") {
  auto store = NewMemoryStore();
  auto session = Session::Open(*store, {"t", "plain-throw"}, RefundPack());
  REQUIRE(session.has_value());
  auto thrower = [](const ProposedCall&) -> Result<ToolOutput> { throw std::logic_error("boom"); };
  CallResult write;
  REQUIRE_NOTHROW(write = (*session)->HandleToolCall(Ship("c1"), thrower));
  CHECK(write.executed);
  CHECK(write.message_is_error);
  CHECK_THAT(write.message, Catch::Contains("unknown") && Catch::Contains("boom"));
  CallResult read;
  REQUIRE_NOTHROW(read = (*session)->HandleToolCall({"c2", "get_order", {}}, thrower));
  const auto& calls = (*session)->pending().calls;
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].outcome == "uncertain");
  CHECK(calls[1].outcome == "error");  // a read has no side effect to be unsure of
  CHECK_FALSE(write.command.has_value());
  REQUIRE((*session)->EndTurn().has_value());
}

TEST_CASE("session: ToolRaised carries a binding's status; a write that raised is uncertain") {
  auto store = NewMemoryStore();
  auto session = Session::Open(*store, {"t", "tool-raised"}, RefundPack());
  REQUIRE(session.has_value());
  auto raiser = [](const ProposedCall&) -> Result<ToolOutput> {
    throw ToolRaised(Status::Unavailable("the tool raised ConnectionError: crm is down"));
  };
  // The write first: its write-ahead commit would take the read's record along.
  CallResult write = (*session)->HandleToolCall(Ship("c1"), raiser);
  CHECK_THAT(write.message, Catch::Contains("unknown") && Catch::Contains("crm is down"));
  CallResult read = (*session)->HandleToolCall({"c2", "get_order", {}}, raiser);
  CHECK_THAT(read.message, Catch::Contains("unavailable: the tool raised ConnectionError"));
  const auto& calls = (*session)->pending().calls;
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].outcome == "uncertain");
  CHECK(calls[1].outcome == "error");
}

TEST_CASE("session commands: a restart reconciles what the last process left in flight") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  Backend backend;
  {
    // The last process reserved and leased the command, and died in the call.
    auto session = f.Open();
    CommandLedgerOptions o;
    o.worker_id = "session:" + f.run().tenant + "/" + f.run().run;
    CommandLedger dead(*f.commands, SystemClock(), o);
    CommandSpec spec;
    spec.run = f.run();
    spec.step = "call";
    spec.call.tool = "ship";
    spec.target = "#A1";
    spec.call.arguments = Ship("c1").arguments;
    spec.decision = {{"call_id", "c1"}, {"decision", "allow"}};
    auto reserved = dead.Reserve(spec);
    REQUIRE(reserved.has_value());
    REQUIRE(dead.Lease(f.run(), reserved->command_key).has_value());
  }
  std::vector<std::string> looked_up;
  auto session = f.Open([&](const Command& c) {
    looked_up.push_back(c.idempotency_key);
    return LookupResult::Found("ext-9", {{"found", true}});
  });
  REQUIRE(session->recovery().has_value());
  CHECK(session->recovery()->expired_leases == 1);
  CHECK(session->recovery()->reconciled == 1);
  REQUIRE(looked_up.size() == 1);
  CHECK(f.Only().state == CommandState::kSucceeded);
  CHECK(f.Only().external_id == "ext-9");
  // The model proposes it again: recorded, not run.
  CallResult again = session->HandleToolCall(Ship("c2"), backend.executor());
  CHECK_FALSE(again.executed);
  CHECK(backend.keys.empty());
  CHECK_THAT(again.message, Catch::Contains("Already done"));
}

TEST_CASE("session commands: a write whose lease fails does not run and keeps the user's yes") {
  auto store = NewMemoryStore();
  TransitionDownStore commands(Transition::kLease);
  SessionOptions options;
  options.commands.store = &commands;
  auto opened = Session::Open(*store, {"t", "lease-down"}, ShopPack(), options);
  REQUIRE(opened.has_value());
  Session& s = **opened;
  ConfirmedCancel w;
  w.Prepare(s);

  commands.down = true;
  CallResult denied = s.HandleToolCall(w.cancel, w.tools);
  CHECK_FALSE(denied.executed);
  CHECK(w.cancels == 0);
  CHECK(denied.decision.rule_id == kStoreUnavailableRule);
  CHECK(s.ledger().working().FindLive(Category::kCondition, "confirmation", 0) != nullptr);

  // The store is back: the same command runs once, on the same yes.
  commands.down = false;
  CallResult retried = s.HandleToolCall({"c2", "cancel_order", {{"order_id", "#W1"}}}, w.tools);
  CHECK(retried.executed);
  CHECK(w.cancels == 1);
  REQUIRE(retried.command.has_value());
  CHECK(retried.command->state == CommandState::kSucceeded);
}

TEST_CASE(
    "session commands: a write refused as invalid input is reported as such, not as a store "
    "outage") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  SessionOptions options;
  options.commands.store = f.commands.get();
  options.commands.step_of = [](const ProposedCall&) { return std::string(); };  // a bug
  auto opened = Session::Open(*f.ledger_store, f.conv, RefundPack(), options);
  REQUIRE(opened.has_value());
  Backend backend;
  CallResult r = (*opened)->HandleToolCall(Ship("c1"), backend.executor());
  CHECK_FALSE(r.executed);
  CHECK(backend.keys.empty());
  CHECK(r.decision.rule_id == kInvalidCommandRule);
  CHECK(r.decision_record.Rule() == kInvalidCommandRule);
  CHECK_THAT(r.message, Catch::Contains("command needs a step") &&
                            Catch::Contains("refused again") && !Catch::Contains("unreachable") &&
                            !Catch::Contains("try again later"));
  CHECK(Calls(**opened).back().outcome == "denied");
  auto listed = f.commands->ListCommands(f.run());
  REQUIRE(listed.has_value());
  CHECK(listed->empty());
}

TEST_CASE(
    "session commands: a write whose write-ahead commit fails gives its lease back and runs once "
    "on the retry") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  auto session = f.Open();
  auto other = f.Open();
  Backend backend;
  // Another writer commits first: this session's write-ahead commit conflicts
  // after its command was reserved and leased in one step.
  REQUIRE(other->RecordUserMessage("hello").ok());
  REQUIRE(other->EndTurn().has_value());
  CallResult r = session->HandleToolCall(Ship("c1"), backend.executor());
  CHECK_FALSE(r.executed);
  CHECK(backend.keys.empty());
  CHECK(r.decision.rule_id == kStateConflictRule);
  Command back = f.Only();
  CHECK(back.state == CommandState::kPending);  // not left leased until it expires
  CHECK(back.attempts == 0);
  CHECK(back.fencing_token == 1);
  REQUIRE(r.command.has_value());
  CHECK(r.command->state == CommandState::kPending);

  REQUIRE(session->Rebase().ok());
  CallResult retried = session->HandleToolCall(Ship("c2"), backend.executor());
  CHECK(retried.executed);
  REQUIRE(backend.keys.size() == 1);
  REQUIRE(session->Flush().ok());  // its settle's answer read: any connection sees it
  Command done = f.Only();
  CHECK(done.state == CommandState::kSucceeded);
  CHECK(done.attempts == 1);
  CHECK(done.fencing_token == 2);
  CHECK(backend.keys[0] == done.idempotency_key);
}
