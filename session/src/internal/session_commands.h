// Internal to the session component: what a Session keeps for its command
// ledger, and the one place an executor is called (so that an exception it
// throws never leaves the session). Not thread-safe, like Session.
#pragma once

#include <optional>
#include <string>

#include "taskledger/commands/command_ledger.h"
#include "taskledger/session/session.h"

namespace taskledger {

struct Session::Commands {
  Commands(CommandStore& s, RunId r, const Clock& clock, CommandLedgerOptions ledger_options,
           SessionCommandOptions o)
      : store(s),
        run(std::move(r)),
        ledger(s, clock, std::move(ledger_options)),
        options(std::move(o)) {}
  // Binds `tool`'s lookup (SessionCommandOptions::lookup) in the ledger.
  void BindLookup(const std::string& tool);
  CommandStore& store;
  RunId run;
  CommandLedger ledger;
  SessionCommandOptions options;
  std::optional<Journal> journal;  // SessionCommandOptions::journal
};

namespace session_internal {

// What one executor call produced: an output, an error Status, or an exception.
struct ExecutorRun {
  std::optional<ToolOutput> output;
  Status error;        // when there is no output
  bool threw = false;  // the error is an exception the executor threw
};

// Calls `execute`, catching everything it throws.
ExecutorRun RunExecutor(const ContextToolExecutor& execute, const ProposedCall& call,
                        const ToolContext& context);

// The tool output as the model reads it: a string verbatim, JSON as text.
std::string OutputText(const nlohmann::json& output);

}  // namespace session_internal
}  // namespace taskledger
