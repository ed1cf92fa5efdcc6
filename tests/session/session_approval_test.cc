// Approvals end to end through a Session on the command ledger, on the memory
// and the Redis command store: a require_approval decision reserves the
// command blocked and tells the model it waits; an operator approves it (the
// library call `taskledger commands approve` makes); the session runs it
// exactly once, through ResumeApproved or when the model proposes it again;
// a denial reaches the model once. A process that dies between the approval
// and the execution, or in the middle of it, neither loses nor repeats it.
// Where nothing holds the request (no command store, an egress tool), the
// model is not told it waits.
#include <catch2/catch.hpp>

#include <string>

#include "session/command_session_support.h"
#include "taskledger/commands/command_ledger.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// What `taskledger commands approve|deny RUN KEY --reason …` does.
CommandLedger Operator(CommandStore& store) {
  CommandLedgerOptions o;
  o.worker_id = "cli";
  return CommandLedger(store, SystemClock(), o);
}

// An operator approves the held command, as `commands approve RUN KEY` would.
void ApproveAsOperator(Fixture& f, const Command& blocked) {
  REQUIRE(Operator(*f.commands).Approve(f.run(), blocked.command_key, "alice", "ok").has_value());
}

// The model asks for a large refund; it is reserved blocked, not run.
Command AskForLargeRefund(Session& session, Backend& backend, Fixture& f) {
  CallResult r = session.HandleToolCall(Refund("c1", 500), backend.executor());
  CHECK_FALSE(r.executed);
  CHECK(r.decision.outcome == Outcome::kRequireApproval);
  CHECK(r.message_is_error);
  CHECK_THAT(r.message, Catch::Contains("waiting for approval") &&
                            Catch::Contains("refunds above 100 need a manager") &&
                            Catch::Contains("runs once an operator approves it"));
  CHECK(backend.keys.empty());
  CHECK(Calls(session).back().outcome == "awaiting_approval");
  Command c = f.Only();
  CHECK(c.state == CommandState::kBlocked);
  CHECK(c.decision.Verdict() == "require_approval");
  CHECK(c.decision.Rule() == "refunds.large_needs_approval");
  REQUIRE(session.EndTurn().has_value());
  return c;
}

}  // namespace

TEST_CASE("approval: an approved command runs once through ResumeApproved") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  auto session = f.Open();
  Backend backend;
  Command blocked = AskForLargeRefund(*session, backend, f);

  // Nothing to resume before the operator acts.
  auto none = session->ResumeApproved(backend.executor());
  REQUIRE(none.has_value());
  CHECK(none->empty());

  REQUIRE(Operator(*f.commands)
              .Approve(f.run(), blocked.command_key, "alice", "customer is known")
              .has_value());
  auto resumed = session->ResumeApproved(backend.executor());
  REQUIRE(resumed.has_value());
  REQUIRE(resumed->size() == 1);
  const CallResult& r = resumed->front();
  CHECK(r.executed);
  CHECK(r.decision.rule_id == "taskledger.operator_approval");
  CHECK_THAT(r.decision.reason, Catch::Contains("alice") && Catch::Contains("customer is known"));
  REQUIRE(backend.keys.size() == 1);
  CHECK(backend.keys[0] == blocked.idempotency_key);
  CHECK(f.Only().state == CommandState::kSucceeded);
  // The call record the model and audit see carries the original call id.
  CHECK(Calls(*session).back().call.id == "c1");
  CHECK(Calls(*session).back().outcome == "ok");
  REQUIRE(session->EndTurn().has_value());

  // Exactly once: neither resuming again nor the model asking again runs it.
  auto again = session->ResumeApproved(backend.executor());
  REQUIRE(again.has_value());
  CHECK(again->empty());
  CallResult asked = session->HandleToolCall(Refund("c2", 500), backend.executor());
  CHECK_FALSE(asked.executed);
  CHECK(backend.keys.size() == 1);
}

TEST_CASE("approval: the model proposing the approved call again runs it, once") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  auto session = f.Open();
  Backend backend;
  Command blocked = AskForLargeRefund(*session, backend, f);
  ApproveAsOperator(f, blocked);
  CallResult r = session->HandleToolCall(Refund("c2", 500), backend.executor());
  CHECK(r.executed);
  CHECK(r.decision.rule_id == "taskledger.operator_approval");
  CHECK(backend.keys.size() == 1);
  auto resumed = session->ResumeApproved(backend.executor());
  REQUIRE(resumed.has_value());
  CHECK(resumed->empty());
  CHECK(backend.keys.size() == 1);
}

TEST_CASE("approval: a denial cancels the command and the model is told once") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  auto session = f.Open();
  Backend backend;
  Command blocked = AskForLargeRefund(*session, backend, f);
  REQUIRE(Operator(*f.commands)
              .Deny(f.run(), blocked.command_key, "bob", "refund policy says no")
              .has_value());
  auto told = session->ResumeApproved(backend.executor());
  REQUIRE(told.has_value());
  REQUIRE(told->size() == 1);
  CHECK_FALSE(told->front().executed);
  CHECK_THAT(told->front().message,
             Catch::Contains("denied by the operator bob") && Catch::Contains("refund policy"));
  CHECK(Calls(*session).back().outcome == "cancelled");
  REQUIRE(session->EndTurn().has_value());
  auto again = session->ResumeApproved(backend.executor());
  REQUIRE(again.has_value());
  CHECK(again->empty());
  CHECK(f.Only().state == CommandState::kCancelled);
  CHECK(backend.keys.empty());
}

TEST_CASE("approval: a crash between approval and execution neither loses nor repeats it") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  Backend backend;
  auto first = f.Open();
  Command blocked = AskForLargeRefund(*first, backend, f);
  ApproveAsOperator(f, blocked);
  // The first process dies here; a new one opens the same conversation.
  auto second = f.Open();
  REQUIRE(second->recovery().has_value());
  CHECK(second->recovery()->ready == 1);
  auto resumed = second->ResumeApproved(backend.executor());
  REQUIRE(resumed.has_value());
  REQUIRE(resumed->size() == 1);
  CHECK(backend.keys.size() == 1);
  REQUIRE(second->EndTurn().has_value());
  // The dead process's session, were it to wake, finds nothing left to run.
  auto stale = first->ResumeApproved(backend.executor());
  REQUIRE(stale.has_value());
  CHECK(stale->empty());
  CHECK(backend.keys.size() == 1);
}

TEST_CASE("approval: a crash during the approved call is reconciled on restart, not rerun") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  Backend backend;
  auto first = f.Open();
  Command blocked = AskForLargeRefund(*first, backend, f);
  ApproveAsOperator(f, blocked);
  // The approved call reaches the system, then the process dies before the
  // outcome is recorded: the executor opens the restarted session itself.
  std::unique_ptr<Session> restarted;
  auto dies = [&](const ProposedCall& call, const ToolContext& ctx) -> Result<ToolOutput> {
    backend.keys.push_back(ctx.idempotency_key);
    CHECK(call.id == "c1");
    restarted = f.Open([&](const Command& c) {
      return c.idempotency_key == backend.keys.back()
                 ? LookupResult::Found("ext-1", {{"refund", "done"}})
                 : LookupResult::NotFound();
    });
    return Status::Timeout("the process died");
  };
  auto resumed = first->ResumeApproved(dies);
  REQUIRE(resumed.has_value());
  REQUIRE(restarted);
  CHECK(restarted->recovery()->expired_leases == 1);
  CHECK(restarted->recovery()->reconciled == 1);
  CHECK(f.Only().state == CommandState::kSucceeded);
  auto nothing = restarted->ResumeApproved(backend.executor());
  REQUIRE(nothing.has_value());
  CHECK(nothing->empty());
  CHECK(backend.keys.size() == 1);
}

TEST_CASE("approval: an approved call found not to have happened after a crash runs again, once") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  Backend backend;
  auto first = f.Open();
  Command blocked = AskForLargeRefund(*first, backend, f);
  ApproveAsOperator(f, blocked);
  // The process dies inside the approved call, before the request left it.
  std::unique_ptr<Session> restarted;
  auto dies = [&](const ProposedCall&, const ToolContext&) -> Result<ToolOutput> {
    restarted = f.Open([](const Command&) { return LookupResult::NotFound(); });
    return Status::Timeout("the process died");
  };
  REQUIRE(first->ResumeApproved(dies).has_value());
  REQUIRE(restarted);
  CHECK(restarted->recovery()->released == 1);
  // Released for another attempt, it keeps its approval: the next resume runs it.
  auto resumed = restarted->ResumeApproved(backend.executor());
  REQUIRE(resumed.has_value());
  REQUIRE(resumed->size() == 1);
  CHECK(resumed->front().executed);
  CHECK(resumed->front().decision.rule_id == "taskledger.operator_approval");
  REQUIRE(backend.keys.size() == 1);
  CHECK(backend.keys[0] == blocked.idempotency_key);
  CHECK(f.Only().state == CommandState::kSucceeded);
  CHECK(f.Only().attempts == 2);
}

// What the model is told when nothing holds the request for an operator: a
// session without a command store, or an egress tool (gated like a write but
// never a command). It must not be told the request waits.
TEST_CASE("approval: with nothing to hold the request, the model is not told it waits") {
  Backend backend;
  auto not_held = [&](const CallResult& r, const std::string& tool, const std::string& reason) {
    CHECK_FALSE(r.executed);
    CHECK(r.decision.outcome == Outcome::kRequireApproval);
    CHECK(r.message_is_error);
    CHECK_FALSE(r.command.has_value());
    CHECK_THAT(r.message, Catch::Contains(tool + " needs approval by a human operator") &&
                              Catch::Contains(reason) && Catch::Contains("Nothing was changed"));
    CHECK_THAT(r.message,
               !Catch::Contains("waiting for approval") && !Catch::Contains("is recorded"));
  };
  SECTION("a session without a command store") {
    Fixture f("memory");
    auto s = Session::Open(*f.ledger_store, f.conv, RefundPack(), SessionOptions{});
    REQUIRE(s.has_value());
    not_held((*s)->HandleToolCall(Refund("c1", 500), backend.executor()), "refund",
             "refunds above 100 need a manager");
  }
  SECTION("an egress tool in a session with a command store") {
    auto pack = RulePack::FromFiles(
        {{"pack.json",
          R"({"name": "pages", "tools": {"read_only": ["get_*"], "egress": ["post_page"]},
              "unknown_tools": "deny"})"},
         {"pages.lua", R"(
rule {
  id = "pages.needs_review", tools = {"post_page"},
  check = function(call, ledger) return require_approval("posts need a review") end,
})"}});
    REQUIRE(pack.has_value());
    Fixture f("memory");
    SessionOptions options;
    options.commands.store = f.commands.get();
    auto s = Session::Open(*f.ledger_store, f.conv, pack.value(), options);
    REQUIRE(s.has_value());
    not_held((*s)->HandleToolCall({"c1", "post_page", {{"url", "https://example.org"}}},
                                  backend.executor()),
             "post_page", "posts need a review");
    auto listed = f.commands->ListCommands(f.run());
    REQUIRE(listed.has_value());
    CHECK(listed->empty());
  }
  CHECK(backend.keys.empty());
}
