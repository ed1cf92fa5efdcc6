// CommandLedger on both stores: the protocol (reserve, lease, call, outcome),
// reconciliation both ways, escalation, the startup guard after a simulated
// crash, approvals, cancellation, controlled replay, LIFO compensation and
// the metrics an operator reads.
#include <catch2/catch.hpp>

#include "command_test_support.h"
#include "fake_service.h"
#include "taskledger/commands/command_ledger.h"
#include "taskledger/commands/command_metrics.h"

using namespace taskledger;
using namespace taskledger::testing;
using S = CommandState;
using Fault = FakeService::Fault;

namespace {

struct Fixture {
  explicit Fixture(const std::string& kind, CommandLedgerOptions options = {})
      : store(MakeCommandStore(kind)), clock(kNow), run(FreshRun("ledger")) {
    options.lease_ms = kLeaseMs;
    ledger = std::make_unique<CommandLedger>(*store, clock, options);
    ledger->Bind("issue_refund", service.Binding());
    ledger->Bind("cancel_refund", undo.Binding());
  }
  std::unique_ptr<CommandStore> store;
  ManualClock clock;
  RunId run;
  FakeService service, undo;
  std::unique_ptr<CommandLedger> ledger;
};

}  // namespace

TEST_CASE("a call runs once and records its evidence", "[commands]") {
  Fixture f(GENERATE(std::string("memory"), std::string("redis")));
  auto done = f.ledger->Run(SpecFor(f.run, "r1"));
  REQUIRE(done.has_value());
  CHECK(done->state == S::kSucceeded);
  CHECK(done->external_id == "ext-1");
  CHECK(done->evidence["target"] == "order:r1");
  CHECK(done->attempts == 1);
  // Running the same logical command again is a no-op on the external system.
  auto again = f.ledger->Run(SpecFor(f.run, "r1"));
  REQUIRE(again.has_value());
  CHECK(again->state == S::kSucceeded);
  CHECK(f.service.calls() == 1);
}

TEST_CASE("a definite refusal marks the command failed", "[commands]") {
  Fixture f(GENERATE(std::string("memory"), std::string("redis")));
  f.service.Script({Fault::kRefuse});
  auto done = f.ledger->Run(SpecFor(f.run, "r1"));
  REQUIRE(done.has_value());
  CHECK(done->state == S::kFailed);
  CHECK(done->last_error == "insufficient funds");
  CHECK(f.service.lookups() == 0);
}

TEST_CASE("an ambiguous outcome is reconciled: found means succeeded", "[commands]") {
  Fixture f(GENERATE(std::string("memory"), std::string("redis")));
  f.service.Script({Fault::kTimeoutAfterEffect});
  auto done = f.ledger->Run(SpecFor(f.run, "r1"));
  REQUIRE(done.has_value());
  CHECK(done->state == S::kSucceeded);
  CHECK(done->evidence["reconciled"] == true);
  CHECK(done->external_id == "ext-1");
  CHECK(f.service.calls() == 1);  // found by lookup, not called again
  CHECK(f.service.effects_on("order:r1") == 1);
}

TEST_CASE("an ambiguous outcome is reconciled: not found means retried, then escalated",
          "[commands]") {
  CommandLedgerOptions options;
  options.max_attempts = 3;
  Fixture f(GENERATE(std::string("memory"), std::string("redis")), options);
  f.service.Script({Fault::kTimeoutBeforeEffect});
  auto retried = f.ledger->Run(SpecFor(f.run, "r1"));
  REQUIRE(retried.has_value());
  CHECK(retried->state == S::kSucceeded);
  CHECK(retried->attempts == 2);
  CHECK(f.service.effects_on("order:r1") == 1);

  f.service.Script(
      {Fault::kTimeoutBeforeEffect, Fault::kTimeoutBeforeEffect, Fault::kTimeoutBeforeEffect});
  auto escalated = f.ledger->Run(SpecFor(f.run, "r2"));
  REQUIRE(escalated.has_value());
  CHECK(escalated->state == S::kBlocked);
  CHECK(escalated->escalated);
  CHECK(escalated->attempts == 3);
  CHECK(escalated->escalation_reason.find("3 attempts") != std::string::npos);
  CHECK(f.service.effects_on("order:r2") == 0);
}

TEST_CASE("a lookup that cannot decide leaves the command uncertain", "[commands]") {
  Fixture f(GENERATE(std::string("memory"), std::string("redis")));
  f.service.Script({Fault::kTimeoutAfterEffect});
  f.service.set_lookup_unreachable(true);
  auto stuck = f.ledger->Run(SpecFor(f.run, "r1"));
  REQUIRE(stuck.has_value());
  CHECK(stuck->state == S::kUncertain);
  f.service.set_lookup_unreachable(false);
  auto resolved = f.ledger->Reconcile(f.run, stuck->command_key);
  REQUIRE(resolved.has_value());
  CHECK(resolved->state == S::kSucceeded);
}

TEST_CASE("an operator settles an uncertain command with the state machine's own moves",
          "[commands]") {
  Fixture f(GENERATE(std::string("memory"), std::string("redis")));
  f.service.Script({Fault::kTimeoutBeforeEffect, Fault::kTimeoutAfterEffect});
  f.service.set_lookup_unreachable(true);
  auto stuck = f.ledger->Run(SpecFor(f.run, "r1"));
  REQUIRE(stuck.has_value());
  REQUIRE(stuck->state == S::kUncertain);
  const std::string key = stuck->command_key;
  OperatorFinding bad{true, "ext-9", "", "alice", ""};
  CHECK(f.ledger->ReconcileByOperator(f.run, key, bad).error().code() ==
        StatusCode::kInvalidArgument);
  CHECK(f.ledger->ReconcileByOperator(f.run, key, {false, "", "", "", ""}).error().code() ==
        StatusCode::kInvalidArgument);
  // Not found: released for a retry, which runs under the same key.
  auto released = f.ledger->ReconcileByOperator(f.run, key, {false, "", "", "alice", "none"});
  REQUIRE(released.has_value());
  CHECK(released->state == S::kPending);
  auto retried = f.ledger->Execute(f.run, key);
  REQUIRE(retried.has_value());
  REQUIRE(retried->state == S::kUncertain);  // the second fault: ambiguous again
  // Found: succeeded, with the operator's evidence.
  auto found = f.ledger->ReconcileByOperator(
      f.run, key, {true, "ext-9", "seen in the ledger of the bank", "alice", ""});
  REQUIRE(found.has_value());
  CHECK(found->state == S::kSucceeded);
  CHECK(found->external_id == "ext-9");
  CHECK(found->evidence["actor"] == "alice");
  CHECK(found->evidence["by"] == "operator");
  auto again = f.ledger->ReconcileByOperator(f.run, key, {false, "", "", "alice", ""});
  CHECK(again.error().code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("the startup guard resolves what a crashed worker left behind", "[commands]") {
  auto kind = GENERATE(std::string("memory"), std::string("redis"));
  CommandLedgerOptions options;
  options.worker_id = "worker-1";
  Fixture f(kind, options);
  // The crashed incarnation: leased three commands and died at different points.
  auto applied = f.ledger->Reserve(SpecFor(f.run, "applied"));      // effect happened
  auto not_applied = f.ledger->Reserve(SpecFor(f.run, "lost"));     // call never reached it
  auto untouched = f.ledger->Reserve(SpecFor(f.run, "untouched"));  // reserved only
  auto finished = f.ledger->Run(SpecFor(f.run, "finished"));
  REQUIRE((applied && not_applied && untouched && finished));
  auto l1 = f.ledger->Lease(f.run, applied->command_key);
  auto l2 = f.ledger->Lease(f.run, not_applied->command_key);
  REQUIRE((l1 && l2));
  f.service.Binding().call(*l1);  // the effect, with no outcome recorded

  // Another worker's live lease is left alone.
  CommandLedgerOptions other_options;
  other_options.worker_id = "worker-2";
  other_options.lease_ms = kLeaseMs;
  CommandLedger other(*f.store, f.clock, other_options);
  auto theirs = other.Reserve(SpecFor(f.run, "theirs"));
  REQUIRE(other.Lease(f.run, theirs->command_key).has_value());

  // worker-1 restarts (same id): its own leases are reclaimed at once.
  CommandLedger restarted(*f.store, f.clock, options);
  restarted.Bind("issue_refund", f.service.Binding());
  auto report = restarted.Recover(f.run);
  REQUIRE(report.has_value());
  CHECK(report->done == 1);
  CHECK(report->expired_leases == 2);
  CHECK(report->reconciled == 1);
  CHECK(report->released == 1);
  CHECK(report->ready == 2);  // "untouched" and the released "lost"
  CHECK(report->leased_elsewhere == 1);
  CHECK(f.store->Get(f.run, applied->command_key)->state == S::kSucceeded);
  CHECK(f.store->Get(f.run, not_applied->command_key)->state == S::kPending);

  // worker-2's lease expires later; the guard of any worker then reconciles it.
  f.clock.Advance(kLeaseMs);
  auto later = restarted.Recover(f.run);
  REQUIRE(later.has_value());
  CHECK(later->expired_leases == 1);
  CHECK(later->released == 1);
  for (const char* step : {"lost", "untouched", "theirs"}) {
    auto c = restarted.Run(SpecFor(f.run, step));
    REQUIRE(c.has_value());
    CHECK(c->state == S::kSucceeded);
  }
  for (const char* step : {"applied", "lost", "untouched", "finished", "theirs"}) {
    CHECK(f.service.effects_on(std::string("order:") + step) == 1);
  }
}

TEST_CASE("approval: blocked until approved, denial cancels, both name who and why", "[commands]") {
  Fixture f(GENERATE(std::string("memory"), std::string("redis")));
  auto blocked = f.ledger->Run(SpecFor(f.run, "big", /*approval=*/true));
  REQUIRE(blocked.has_value());
  CHECK(blocked->state == S::kBlocked);
  CHECK(f.service.calls() == 0);
  auto missing_reason = f.ledger->Approve(f.run, blocked->command_key, "alice", "");
  REQUIRE_FALSE(missing_reason.has_value());
  CHECK(missing_reason.error().code() == StatusCode::kInvalidArgument);
  auto approved = f.ledger->Approve(f.run, blocked->command_key, "alice", "customer verified");
  REQUIRE(approved.has_value());
  CHECK(approved->state == S::kApproved);
  CHECK(approved->approver == "alice");
  auto done = f.ledger->Execute(f.run, blocked->command_key);
  REQUIRE(done.has_value());
  CHECK(done->state == S::kSucceeded);

  auto other = f.ledger->Reserve(SpecFor(f.run, "bigger", true));
  auto denied = f.ledger->Deny(f.run, other->command_key, "bob", "over the limit");
  REQUIRE(denied.has_value());
  CHECK(denied->state == S::kCancelled);
  CHECK(denied->approval_reason == "over the limit");
  CHECK(f.ledger->Execute(f.run, other->command_key)->state == S::kCancelled);

  auto third = f.ledger->Reserve(SpecFor(f.run, "third"));
  auto cancelled = f.ledger->Cancel(f.run, third->command_key, "carol", "customer changed mind");
  REQUIRE(cancelled.has_value());
  CHECK(cancelled->cancel_reason == "carol: customer changed mind");
  CHECK(f.service.calls() == 1);
}

TEST_CASE("replay: explicit, reasoned, policy-checked, and budgeted", "[commands]") {
  auto kind = GENERATE(std::string("memory"), std::string("redis"));
  CommandLedgerOptions options;
  options.replay.max_attempts_per_command = 3;
  options.replay.max_replays_per_run = 3;
  options.replay.max_replays_per_window = 10;
  bool policy_allows = true;
  options.policy_recheck = [&](const Command&) {
    return policy_allows ? Status::Ok() : Status::PolicyError("rule retail.limit denies");
  };
  Fixture f(kind, options);
  auto ok = f.ledger->Run(SpecFor(f.run, "ok"));
  REQUIRE(ok->state == S::kSucceeded);
  f.service.Script({Fault::kRefuse, Fault::kRefuse, Fault::kRefuse});
  auto failed = f.ledger->Run(SpecFor(f.run, "r1"));
  REQUIRE(failed->state == S::kFailed);
  const std::string key = failed->command_key;

  auto no_reason = f.ledger->Replay(f.run, key, {"ops", "", false});
  REQUIRE_FALSE(no_reason.has_value());
  CHECK(no_reason.error().code() == StatusCode::kInvalidArgument);
  auto not_failed = f.ledger->Replay(f.run, ok->command_key, {"ops", "again", false});
  REQUIRE_FALSE(not_failed.has_value());
  CHECK(not_failed.error().code() == StatusCode::kFailedPrecondition);

  policy_allows = false;
  auto refused = f.ledger->Replay(f.run, key, {"ops", "card updated", false});
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code() == StatusCode::kPolicyError);
  policy_allows = true;

  auto dry = f.ledger->Replay(f.run, key, {"ops", "card updated", true});
  REQUIRE(dry.has_value());
  CHECK_FALSE(dry->replayed);
  CHECK(f.store->Get(f.run, key)->state == S::kFailed);
  CHECK(f.service.calls() == 2);  // the dry run called nothing

  auto replayed = f.ledger->Replay(f.run, key, {"ops", "card updated", false});
  REQUIRE(replayed.has_value());
  CHECK(replayed->replayed);
  CHECK(replayed->command.state == S::kPending);
  CHECK(replayed->command.replay_reason == "ops: card updated");
  CHECK(f.ledger->Execute(f.run, key)->state == S::kFailed);  // refused again: attempt 2
  REQUIRE(f.ledger->Replay(f.run, key, {"ops", "retry", false}).has_value());
  CHECK(f.ledger->Execute(f.run, key)->state == S::kFailed);  // attempt 3

  // Per command: 3 attempts used; a dry run reports it too.
  auto spent = f.ledger->Replay(f.run, key, {"ops", "once more", true});
  REQUIRE_FALSE(spent.has_value());
  CHECK(spent.error().code() == StatusCode::kLimitExceeded);

  // Per run: the third replay is the last.
  f.service.Script({Fault::kRefuse});
  auto r2 = f.ledger->Run(SpecFor(f.run, "r2"));
  REQUIRE(r2->state == S::kFailed);
  REQUIRE(f.ledger->Replay(f.run, r2->command_key, {"ops", "x", false}).has_value());
  f.service.Script({Fault::kRefuse});
  REQUIRE(f.ledger->Execute(f.run, r2->command_key)->state == S::kFailed);
  auto over_run = f.ledger->Replay(f.run, r2->command_key, {"ops", "x", false});
  REQUIRE_FALSE(over_run.has_value());
  CHECK(over_run.error().code() == StatusCode::kLimitExceeded);
  CHECK(over_run.error().message().find("run has used 3") != std::string::npos);
}

TEST_CASE("replay rate limit refuses a third replay within the window", "[commands]") {
  CommandLedgerOptions options;
  options.replay.max_replays_per_window = 2;
  options.replay.window_ms = 60'000;
  Fixture f(GENERATE(std::string("memory"), std::string("redis")), options);
  std::vector<std::string> keys;
  for (const char* step : {"a", "b", "c"}) {
    f.service.Script({Fault::kRefuse});
    keys.push_back(f.ledger->Run(SpecFor(f.run, step))->command_key);
  }
  REQUIRE(f.ledger->Replay(f.run, keys[0], {"ops", "x", false}).has_value());
  REQUIRE(f.ledger->Replay(f.run, keys[1], {"ops", "x", false}).has_value());
  auto limited = f.ledger->Replay(f.run, keys[2], {"ops", "x", false});
  REQUIRE_FALSE(limited.has_value());
  CHECK(limited.error().message().find("rate limit") != std::string::npos);
  f.clock.Advance(60'000);
  CHECK(f.ledger->Replay(f.run, keys[2], {"ops", "x", false}).has_value());
}

TEST_CASE("compensation runs newest-first and ends COMPENSATED", "[commands]") {
  Fixture f(GENERATE(std::string("memory"), std::string("redis")));
  for (const char* step : {"first", "second", "third"}) {
    CommandSpec spec = SpecFor(f.run, step);
    spec.compensation =
        CompensationSpec{"cancel_refund", std::string("order:") + step, {{"undo", step}}};
    REQUIRE(f.ledger->Run(spec)->state == S::kSucceeded);
  }
  auto pending = f.ledger->Reserve(SpecFor(f.run, "never"));
  auto status = f.ledger->CompensateRun(f.run, "payment step failed");
  REQUIRE(status.has_value());
  CHECK(*status == RunStatus::kCompensated);
  CHECK(f.undo.applied_order() ==
        std::vector<std::string>{"order:third", "order:second", "order:first"});
  CHECK(f.store->Get(f.run, pending->command_key)->state == S::kCancelled);
  CHECK(f.service.effects_on("order:never") == 0);
  // Compensations are commands themselves, with their own idempotency keys.
  int compensations = 0;
  auto all = f.store->ListCommands(f.run);
  REQUIRE(all.has_value());
  for (const Command& c : *all) {
    if (!c.compensates.empty()) {
      ++compensations;
      CHECK(c.state == S::kSucceeded);
    }
  }
  CHECK(compensations == 3);
  // Compensating again does nothing more.
  CHECK(*f.ledger->CompensateRun(f.run, "again") == RunStatus::kCompensated);
  CHECK(f.undo.calls() == 3);
}

TEST_CASE("a compensation that fails ends the run FAILED, not in between", "[commands]") {
  Fixture f(GENERATE(std::string("memory"), std::string("redis")));
  for (const char* step : {"first", "second"}) {
    CommandSpec spec = SpecFor(f.run, step);
    spec.compensation = CompensationSpec{"cancel_refund", std::string("order:") + step, {}};
    REQUIRE(f.ledger->Run(spec)->state == S::kSucceeded);
  }
  f.undo.Script({Fault::kRefuse});
  auto status = f.ledger->CompensateRun(f.run, "boom");
  REQUIRE(status.has_value());
  CHECK(*status == RunStatus::kFailed);
  CHECK(f.undo.applied_order().empty());  // "second" was refused; "first" never attempted
  auto record = f.store->GetRun(f.run);
  CHECK(record->status == RunStatus::kFailed);
  CHECK(record->reason.find("failed") != std::string::npos);
}

TEST_CASE("metrics count commands by status, tool and age", "[commands]") {
  Fixture f(GENERATE(std::string("memory"), std::string("redis")));
  f.run.tenant += "-metrics";  // a tenant of its own: metrics scan every run of it
  REQUIRE(f.ledger->Run(SpecFor(f.run, "ok"))->state == S::kSucceeded);
  f.service.Script({Fault::kTimeoutAfterEffect});
  f.service.set_lookup_unreachable(true);
  REQUIRE(f.ledger->Run(SpecFor(f.run, "unsure"))->state == S::kUncertain);
  auto leased = f.ledger->Reserve(SpecFor(f.run, "hung"));
  REQUIRE(f.ledger->Lease(f.run, leased->command_key).has_value());
  f.clock.Advance(kLeaseMs + 120'000);
  auto m = CollectCommandMetrics(*f.store, f.run.tenant, f.clock.NowMs());
  REQUIRE(m.has_value());
  CHECK(m->uncertain == 1);
  CHECK(m->expired_leases == 1);
  CHECK(m->by_status_tool_age.at({"succeeded", "issue_refund", "lt_10m"}) == 1);
  std::string text = FormatPrometheus(*m, f.run.tenant);
  CHECK(text.find("taskledger_commands_uncertain{tenant=") != std::string::npos);
  CHECK(text.find("status=\"leased\",tool=\"issue_refund\",age=\"lt_10m\"} 1") !=
        std::string::npos);
}
