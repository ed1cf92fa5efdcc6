// The command seeding the CLI tests share (see cli_seed.h).
#include "cli/cli_seed.h"

#include <catch2/catch.hpp>

#include "taskledger/base/clock.h"
#include "taskledger/commands/command_ledger.h"
#include "taskledger/commands/redis_command_store.h"

namespace taskledger::testing {

SeededCommand SeedBlockedRefund(const std::string& url, const std::string& tenant) {
  RedisOptions ro;
  ro.url = url;
  auto store = OpenRedisCommandStore(ro);
  REQUIRE(store.has_value());
  SeededCommand seeded;
  seeded.store = std::move(store).value();
  CommandLedger ledger(*seeded.store, SystemClock());
  seeded.spec.run = {tenant, "run-1"};
  seeded.spec.step = "refund-1";
  seeded.spec.call.tool = "issue_refund";
  seeded.spec.target = "order:A17";
  seeded.spec.call.arguments = {{"order_id", "A17"}, {"amount", 30}};
  seeded.spec.requires_approval = true;
  auto reserved = ledger.Reserve(seeded.spec);
  REQUIRE(reserved.has_value());
  seeded.key = reserved->command_key;
  return seeded;
}

CliRun RunCliOn(std::vector<std::string> args, const std::string& url, const std::string& tenant) {
  args.insert(args.end(), {"--store", url, "--tenant", tenant});
  return RunCli(args);
}

}  // namespace taskledger::testing
