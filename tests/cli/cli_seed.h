// Seeding for the CLI tests that drive the `commands` verbs against a Redis
// (or Redis Cluster) command store: one refund command reserved through the
// real CommandLedger so it sits blocked awaiting approval, and running the
// CLI with --store/--tenant appended. Tests only; not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "taskledger/commands/command_store.h"

namespace taskledger::testing {

// A command the test reserved: the store it lives in, its spec and its key.
struct SeededCommand {
  std::unique_ptr<CommandStore> store;
  CommandSpec spec;
  std::string key;
};

// Opens the Redis command store at `url` and reserves, under run
// {tenant, "run-1"}, step "refund-1": issue_refund on order:A17
// ({"order_id":"A17","amount":30}) that requires approval, so it is blocked.
// Fails the running test (REQUIRE) if the store cannot be opened or the
// reservation fails.
SeededCommand SeedBlockedRefund(const std::string& url, const std::string& tenant);

// RunCli(args) with "--store url --tenant tenant" appended.
CliRun RunCliOn(std::vector<std::string> args, const std::string& url, const std::string& tenant);

}  // namespace taskledger::testing
