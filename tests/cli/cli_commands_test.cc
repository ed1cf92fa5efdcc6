// `taskledger commands reconcile`: the operator's way out of an uncertain
// command, through the CLI binary against a real Redis. What an operator
// notices: --found settles it as succeeded with their evidence, --not-found
// releases it for a retry (and escalates it once its attempts are spent), and
// wrong usage or a command that is not uncertain is told apart by exit code.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "support/redis_server.h"
#include "taskledger/base/clock.h"
#include "taskledger/commands/command_ledger.h"
#include "taskledger/commands/redis_command_store.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// A command whose call left an ambiguous outcome and that no lookup could decide.
std::string ReserveUncertain(CommandLedger& ledger, const RunId& run, const std::string& step) {
  CommandSpec spec;
  spec.run = run;
  spec.step = step;
  spec.call.tool = "issue_refund";
  spec.target = "order:" + step;
  spec.call.arguments = {{"order_id", step}};
  auto reserved = ledger.Reserve(spec);
  REQUIRE(reserved.has_value());
  auto leased = ledger.Lease(run, reserved->command_key);
  REQUIRE(leased.has_value());
  // The binding's lookup cannot reach the system: the command stays uncertain.
  ledger.Bind("issue_refund", {nullptr, [](const Command&) {
                                 return LookupResult::Unknown("the refund service is down");
                               }});
  auto outcome = ledger.RecordOutcome(*leased, ToolOutcome::Ambiguous("timeout"));
  REQUIRE(outcome.has_value());
  REQUIRE(outcome->state == CommandState::kUncertain);
  return reserved->command_key;
}

}  // namespace

TEST_CASE("commands reconcile: found, not found, escalation and usage errors", "[redis]") {
  const std::string url = SharedRedisUrl();
  const std::string tenant = "cli-reconcile-" + std::to_string(::getpid());
  RedisOptions ro;
  ro.url = url;
  auto store = OpenRedisCommandStore(ro);
  REQUIRE(store.has_value());
  CommandLedgerOptions lo;
  lo.max_attempts = 3;  // what the CLI's ledger uses
  CommandLedger ledger(**store, SystemClock(), lo);
  const RunId run{tenant, "run-1"};
  const std::vector<std::string> at = {"--store", url, "--tenant", tenant};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), at.begin(), at.end());
    return RunCli(args);
  };

  const std::string found = ReserveUncertain(ledger, run, "a");
  // Usage: neither, both, or --found without --evidence.
  CHECK(with({"commands", "reconcile", "run-1", found}).exit_code == 2);
  CHECK(with({"commands", "reconcile", "run-1", found, "--found", "r1", "--not-found"}).exit_code ==
        2);
  CHECK(with({"commands", "reconcile", "run-1", found, "--found", "r1"}).exit_code == 2);
  CHECK((*store)->Get(run, found)->state == CommandState::kUncertain);

  CliRun ok = with({"commands", "reconcile", "run-1", found, "--found", "re_991", "--evidence",
                    "refund re_991 in the payment dashboard", "--actor", "alice", "--json"});
  INFO(ok.out << ok.err);
  REQUIRE(ok.exit_code == 0);
  CHECK(ok.LastJson()["command"]["state"] == "succeeded");
  auto settled = (*store)->Get(run, found);
  REQUIRE(settled.has_value());
  CHECK(settled->state == CommandState::kSucceeded);
  CHECK(settled->external_id == "re_991");
  CHECK(settled->evidence["actor"] == "alice");
  CHECK(settled->evidence["evidence"] == "refund re_991 in the payment dashboard");
  // Not uncertain any more: a refused transition, exit 1.
  CHECK(with({"commands", "reconcile", "run-1", found, "--not-found"}).exit_code == 1);

  const std::string missing = ReserveUncertain(ledger, run, "b");
  CliRun released = with({"commands", "reconcile", "run-1", missing, "--not-found"});
  INFO(released.out << released.err);
  REQUIRE(released.exit_code == 0);
  CHECK_THAT(released.out, Catch::Contains("-> pending"));
  CHECK((*store)->Get(run, missing)->state == CommandState::kPending);

  // Attempts spent: not found escalates it to a human instead.
  for (int attempt = 2; attempt <= 3; ++attempt) {
    auto leased = ledger.Lease(run, missing);
    REQUIRE(leased.has_value());
    REQUIRE(ledger.RecordOutcome(*leased, ToolOutcome::Ambiguous("timeout")).has_value());
    if (attempt == 3) break;
    auto again = ledger.ReconcileByOperator(run, missing, {false, "", "", "bob", ""});
    REQUIRE(again.has_value());
    REQUIRE(again->state == CommandState::kPending);
  }
  CliRun escalated =
      with({"commands", "reconcile", "run-1", missing, "--not-found", "--reason", "no trace"});
  INFO(escalated.out << escalated.err);
  REQUIRE(escalated.exit_code == 0);
  auto blocked = (*store)->Get(run, missing);
  REQUIRE(blocked.has_value());
  CHECK(blocked->state == CommandState::kBlocked);
  CHECK(blocked->escalated);
  CHECK_THAT(blocked->escalation_reason, Catch::Contains("no trace"));
  CHECK(with({"commands", "reconcile", "run-1", "nope", "--not-found"}).exit_code == 2);
  CHECK((*store)->DropRun(run).ok());
}
