// Fixtures of the session tests that write through the command ledger: a
// pack with an allowed write (ship) and one that may need an operator's
// approval (refund above 100), a backend that records the idempotency key of
// every call it receives, and a conversation + command store on either store.
// Test main thread only.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands/command_test_support.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/session/session.h"

namespace taskledger::testing {

// ship is allowed; a refund above 100 needs an operator's approval.
inline std::shared_ptr<const RulePack> RefundPack() {
  std::vector<PackFile> files = {
      {"pack.json",
       R"({"name": "refunds", "tools": {"read_only": ["get_*"], "writes": ["refund", "ship"]},
           "unknown_tools": "deny"})"},
      {"refunds.lua", R"(
rule {
  id = "refunds.large_needs_approval", tools = {"refund"},
  check = function(call, ledger)
    if call.args.amount > 100 then return require_approval("refunds above 100 need a manager") end
    return allow()
  end,
}
)"}};
  auto pack = RulePack::FromFiles(std::move(files));
  if (!pack.has_value()) throw std::runtime_error(pack.error().ToString());
  return pack.value();
}

// The external system: counts effects per idempotency key, as a payment API would.
struct Backend {
  std::vector<std::string> keys;  // every call that reached it, with its key
  bool throw_next = false;
  ContextToolExecutor executor() {
    return [this](const ProposedCall& call, const ToolContext& ctx) -> Result<ToolOutput> {
      if (call.tool == "get_order") return ToolOutput{{{"status", "paid"}}, false};
      keys.push_back(ctx.idempotency_key);
      if (throw_next) {
        throw_next = false;
        throw std::runtime_error("connection reset after the request was sent");
      }
      return ToolOutput{{{"id", "ext-" + std::to_string(keys.size())}, {"ok", true}}, false};
    };
  }
};

inline ProposedCall Ship(const std::string& id) { return {id, "ship", {{"order_id", "#A1"}}}; }
inline ProposedCall Refund(const std::string& id, double amount) {
  return {id, "refund", {{"order_id", "#A1"}, {"amount", amount}}};
}

struct Fixture {
  std::unique_ptr<Store> ledger_store = NewMemoryStore();
  std::unique_ptr<CommandStore> commands;
  ConversationId conv;
  explicit Fixture(const std::string& kind) : commands(MakeCommandStore(kind)) {
    RunId fresh = FreshRun("session");
    conv = ConversationId{fresh.tenant, fresh.run};
  }
  RunId run() const { return RunId{conv.tenant, conv.conversation}; }
  std::unique_ptr<Session> Open(std::function<LookupResult(const Command&)> lookup = {}) {
    SessionOptions options;
    options.commands.store = commands.get();
    options.commands.lookup = std::move(lookup);
    auto s = Session::Open(*ledger_store, conv, RefundPack(), options);
    REQUIRE(s.has_value());
    return std::move(s).value();
  }
  Command Only() {
    auto listed = commands->ListCommands(run());
    REQUIRE(listed.has_value());
    REQUIRE(listed->size() == 1);
    return listed->front();
  }
};

inline const std::vector<CallRecord>& Calls(const Session& s) { return s.pending().calls; }

}  // namespace taskledger::testing
