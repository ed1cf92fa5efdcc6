// Session::ProposeExternal / ReportOutcome, the API for a client that runs
// calls itself (taskledger serve): a write is reserved, written ahead and
// leased but not run; the reported outcome settles it once, a repeated report
// changes nothing, a stale lease is refused with nothing staged; and sessions
// sharing one checker on the same conversation never see each other's view;
// an egress tool is gated and recorded like a write but gets no command.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "session/command_session_support.h"

using namespace taskledger;
using namespace taskledger::testing;

TEST_CASE("external: a write is leased to the client, settled by its report, then deduplicated") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  auto session = f.Open();
  CallResult proposed = session->ProposeExternal(Ship("c1"));
  CHECK(proposed.decision.allowed());
  CHECK_FALSE(proposed.executed);
  REQUIRE(proposed.command);
  CHECK(proposed.command->state == CommandState::kLeased);
  CHECK_FALSE(proposed.command->idempotency_key.empty());
  // Written ahead: the decision is durable before the client runs anything.
  CHECK(session->ledger().version() == 1);

  ExternalOutcome ok;
  ok.output = {{"shipped", true}};
  ok.command_key = proposed.command->command_key;
  ok.fencing_token = proposed.command->fencing_token;
  auto reported = session->ReportOutcome(Ship("c1"), ok);
  REQUIRE(reported.has_value());
  REQUIRE(reported->command);
  CHECK(reported->command->state == CommandState::kSucceeded);
  CHECK(Calls(*session).back().outcome == "ok");
  REQUIRE(session->EndTurn().has_value());

  // A retried report (its answer was lost): accepted, nothing changes.
  auto again = session->ReportOutcome(Ship("c1"), ok);
  REQUIRE(again.has_value());
  CHECK(again->command->state == CommandState::kSucceeded);
  CHECK(f.Only().state == CommandState::kSucceeded);

  // Proposed again by the model: the recorded outcome, not a second lease.
  CallResult dup = session->ProposeExternal(Ship("c2"));
  REQUIRE(dup.command);
  CHECK(dup.command->state == CommandState::kSucceeded);
  CHECK_THAT(dup.message, Catch::Contains("Already done"));
}

TEST_CASE("external: a stale lease is refused and nothing is staged") {
  Fixture f("memory");
  auto session = f.Open();
  CallResult proposed = session->ProposeExternal(Ship("c1"));
  REQUIRE(proposed.command);
  REQUIRE(session->EndTurn().has_value());
  ExternalOutcome ok;
  ok.output = {{"shipped", true}};
  ok.command_key = proposed.command->command_key;
  ok.fencing_token = proposed.command->fencing_token + 7;
  auto refused = session->ReportOutcome(Ship("c1"), ok);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code() == StatusCode::kFailedPrecondition);
  CHECK_FALSE(session->ledger().has_pending());
  CHECK(f.Only().state == CommandState::kLeased);
  ok.command_key = "no-such-command";
  auto missing = session->ReportOutcome(Ship("c1"), ok);
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code() == StatusCode::kNotFound);
}

TEST_CASE("external: an uncertain report without a lookup goes to an operator") {
  Fixture f("memory");
  auto session = f.Open();
  CallResult proposed = session->ProposeExternal(Ship("c1"));
  REQUIRE(proposed.command);
  ExternalOutcome lost;
  lost.kind = ExternalOutcome::Kind::kUncertain;
  lost.detail = "the connection dropped after the request was sent";
  lost.command_key = proposed.command->command_key;
  lost.fencing_token = proposed.command->fencing_token;
  auto reported = session->ReportOutcome(Ship("c1"), lost);
  REQUIRE(reported.has_value());
  CHECK(Calls(*session).back().outcome == "uncertain");
  CHECK(f.Only().state == CommandState::kBlocked);
  CHECK(f.Only().escalated);
}

TEST_CASE("external: a refund needing approval is held, then leased once approved") {
  Fixture f("memory");
  auto session = f.Open();
  CallResult held = session->ProposeExternal(Refund("c1", 500));
  CHECK(held.decision.outcome == Outcome::kRequireApproval);
  REQUIRE(held.command);
  CHECK(held.command->state == CommandState::kBlocked);
  REQUIRE(session->EndTurn().has_value());
  CommandLedger op(*f.commands, SystemClock());
  REQUIRE(op.Approve(f.run(), held.command->command_key, "alice", "known customer").has_value());
  auto reopened = f.Open();
  CallResult run = reopened->ProposeExternal(Refund("c2", 500));
  REQUIRE(run.command);
  CHECK(run.command->state == CommandState::kLeased);
  CHECK(run.decision.rule_id == "taskledger.operator_approval");
}

TEST_CASE("external: sessions sharing a checker on one conversation see their own state") {
  std::vector<PackFile> files = {
      {"pack.json", R"({"name": "gate", "tools": {"writes": ["ship"]}})"}, {"gate.lua", R"(
rule {
  id = "gate.ok", tools = {"ship"},
  check = function(call, ledger)
    if ledger.condition("ok") == true then return allow() end
    return deny("not ok yet")
  end,
})"}};
  auto pack = RulePack::FromFiles(std::move(files));
  REQUIRE(pack.has_value());
  auto checker = PolicyChecker::Create(*pack);
  REQUIRE(checker.has_value());
  auto store = NewMemoryStore();
  ConversationId conv{"t", "shared-checker"};
  SessionOptions options;
  options.checker = checker->get();
  options.commit_before_write = false;
  {
    auto first = Session::Open(*store, conv, *pack, options);
    REQUIRE(first.has_value());
    CHECK_FALSE((*first)->Check(Ship("c1")).decision.allowed());
  }
  {
    auto ledger = Ledger::Open(*store, conv);
    REQUIRE(ledger.has_value());
    Update u;
    u.category = Category::kCondition;
    u.key = "ok";
    u.value = true;
    REQUIRE((*ledger)->Stage(u).ok());
    REQUIRE((*ledger)->Commit().has_value());
  }
  // Opened at version 1, generation 0 again, on the same checker.
  auto second = Session::Open(*store, conv, *pack, options);
  REQUIRE(second.has_value());
  CHECK((*second)->Check(Ship("c2")).decision.allowed());
  // The class a session answers is the shared checker's plan for its pack.
  CHECK((*second)->ClassOf("ship") == CallClass{ToolClass::kWrites, false});
  CHECK((*second)->ClassOf("ship") == (*checker)->ClassOf("ship"));
  CHECK((*second)->ClassOf("launch_rocket") == CallClass{ToolClass::kUnknown, false});
}

TEST_CASE("external: an output recorded or reported keeps the class of its tool") {
  Fixture f("memory");
  auto opened = Session::Open(*f.ledger_store, f.conv, RefundPack());
  REQUIRE(opened.has_value());
  Session& s = **opened;
  CHECK(s.ClassOf("get_order") == CallClass{ToolClass::kReadOnly, false});
  CHECK(s.ClassOf("ship") == CallClass{ToolClass::kWrites, false});
  CHECK(s.ClassOf("launch_rocket") == CallClass{ToolClass::kUnknown, false});
  // Recorded by the caller: a read is not environment-changing, a write is.
  REQUIRE(
      s.RecordToolOutput({"r1", "get_order", {}}, ToolOutput{{{"status", "paid"}}, false}).ok());
  REQUIRE(s.RecordToolOutput(Ship("w1"), ToolOutput{{{"ok", true}}, false}).ok());
  // Reported without a command: an unknown outcome of a read is an error (it
  // changed nothing), of a write or an undeclared tool it is uncertain.
  ExternalOutcome lost;
  lost.kind = ExternalOutcome::Kind::kUncertain;
  lost.detail = "connection reset";
  REQUIRE(s.ReportOutcome({"r2", "get_order", {}}, lost).has_value());
  REQUIRE(s.ReportOutcome(Ship("w2"), lost).has_value());
  REQUIRE(s.ReportOutcome({"u1", "launch_rocket", {}}, lost).has_value());
  std::vector<std::string> recorded;
  for (const CallRecord& c : Calls(s)) {
    recorded.push_back(c.call.id + ":" + c.outcome + (c.writes ? ":writes" : ":reads"));
  }
  CHECK(recorded == std::vector<std::string>{"r1:ok:reads", "w1:ok:writes", "r2:error:reads",
                                             "w2:uncertain:writes", "u1:uncertain:writes"});
}

TEST_CASE("external: an egress call is gated and recorded like a write but is no command") {
  auto pack = RulePack::FromFiles({{"pack.json", R"({"name": "web", "tools": {
      "writes": ["ship"], "egress": ["get_webpage"]}})"}});
  REQUIRE(pack.has_value());
  Fixture f("memory");
  SessionOptions options;
  options.commands.store = f.commands.get();
  auto opened = Session::Open(*f.ledger_store, f.conv, *pack, options);
  REQUIRE(opened.has_value());
  Session& s = **opened;
  const ProposedCall page{"p1", "get_webpage", {{"url", "https://docs.example.org/"}}};
  CallResult proposed = s.ProposeExternal(page);
  CHECK(proposed.decision.allowed());
  CHECK(proposed.decision.egress);
  CHECK_FALSE(proposed.command);
  CHECK(s.ledger().version() == 1);  // written ahead, as a write is
  ExternalOutcome ok;
  ok.output = "the page";
  REQUIRE(s.ReportOutcome(page, ok).has_value());
  REQUIRE(Calls(s).size() == 1);
  CHECK(Calls(s).back().writes);
  CHECK(Calls(s).back().outcome == "ok");
  // A write of the same session is still a command.
  CHECK(s.ProposeExternal(Ship("w1")).command);
  auto listed = f.commands->ListCommands(f.run());
  REQUIRE(listed.has_value());
  REQUIRE(listed->size() == 1);
  CHECK(listed->front().call.tool == "ship");
}

TEST_CASE("external: an outcome reported before any check carries no decision record") {
  Fixture f("memory");
  auto opened = Session::Open(*f.ledger_store, f.conv, RefundPack());
  REQUIRE(opened.has_value());
  Session& s = **opened;
  ExternalOutcome ok;
  ok.output = {{"status", "paid"}};
  // No call was checked yet: the result has no record (null, as in 0.1), not
  // an empty one a caller would read as a record with no fields.
  auto unchecked = s.ReportOutcome({"r1", "get_order", {}}, ok);
  REQUIRE(unchecked.has_value());
  CHECK(unchecked->decision_record.Json().is_null());
  CHECK(unchecked->decision_record.Verdict().empty());
  // Proposed first: the report carries the proposal's record.
  CHECK(s.ProposeExternal(Ship("w1")).decision.allowed());
  auto reported = s.ReportOutcome(Ship("w1"), ok);
  REQUIRE(reported.has_value());
  CHECK(reported->decision_record.Json().is_object());
  CHECK(reported->decision_record.CallId() == "w1");
  CHECK(reported->decision_record.Verdict() == "allow");
}
