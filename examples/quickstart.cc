// The README's 30-second example, compiled and run by the tests so it cannot
// rot: a subscription agent's cancellation is blocked during the grace period,
// and the same call is allowed once the state allows it.
#include <iostream>

#include "taskledger/commands/memory_command_store.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/render/state_block.h"
#include "taskledger/session/session.h"

using namespace taskledger;

int main(int argc, char** argv) {
  std::string rules = argc > 1 ? argv[1] : "rules/subscription";
  auto pack = RulePack::Load(rules);
  if (!pack) return std::cerr << pack.error().ToString() << "\n", 2;
  auto store = NewMemoryStore();  // or OpenStore("redis://127.0.0.1:6379")
  // Where writes are recorded as commands before they run (idempotency key,
  // lease, outcome, approvals); or OpenRedisCommandStore.
  auto commands = NewMemoryCommandStore();
  SessionOptions options;
  options.commands.store = commands.get();
  auto session = Session::Open(*store, {"acme", "conv-1"}, pack.value(), options).value();

  // Your tools. taskledger runs one only if the policy allows the call.
  auto tools = [](const ProposedCall& call) -> Result<ToolOutput> {
    if (call.tool == "get_subscription")
      return ToolOutput{{{"status", "grace_period"}, {"days_remaining", 5}}};
    if (call.tool == "verify_identity") return ToolOutput{{{"verified", true}}};
    return ToolOutput{{{"ok", true}}};
  };

  session->HandleToolCall({"c1", "get_subscription", {{"user_id", "u1"}}}, tools);
  CallResult r = session->HandleToolCall({"c2", "cancel_subscription", {{"user_id", "u1"}}}, tools);
  std::cout << (r.executed ? "executed" : "blocked") << ": " << r.message << "\n";
  (void)session->EndTurn();  // commits version 1

  auto block = RenderStateBlock(session->ledger().head(), session->clock().NowMs());
  std::cout << block->text << "\n";
}
