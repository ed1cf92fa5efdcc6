// The session crash harness's worker: one agent loop (Session on Redis, with
// the command ledger on the same Redis) that a scripted model drives through
// STEPS steps of one conversation. Steps come in threes: two ship an item
// each (allowed), back to back in one turn, so the second write goes out
// behind the first one's unread settle; the third refunds one
// (require_approval: the worker, as the operator, approves it, then
// ResumeApproved runs it). Every effect goes to the
// FileEffectService under the command's idempotency key. A restarted worker
// opens the same conversation (the startup guard reconciles what its
// predecessor left in flight) and the model proposes every step again: what
// already happened comes back recorded, what did not happen runs.
//
// usage: session_crash_worker REDIS_URL EFFECTS_DIR RUN STEPS
// env:   TL_CRASH_POINT=after_reserve|after_lease|during_call|after_effect|after_outcome|
//                       after_blocked|after_approve|after_settle_sent (a deferred
//                       settle sent, its answer not read yet)
//        TL_CRASH_STEP=K   -> SIGKILL itself at that point of step K
// Exit 0 when the loop got through every step; 2 on a store error.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "commands/file_effect_service.h"
#include "taskledger/commands/command_ledger.h"
#include "taskledger/commands/redis_command_store.h"
#include "taskledger/ledger/redis_store.h"
#include "taskledger/session/session.h"

using namespace taskledger;

namespace {

std::string g_point;
int g_step = -1;

void MaybeDie(std::string_view point, int step) {
  if (!g_point.empty() && point == g_point && step == g_step) ::raise(SIGKILL);
}

int StepOf(const nlohmann::json& arguments) { return arguments.value("step", -1); }

std::shared_ptr<const RulePack> Pack() {
  std::vector<PackFile> files = {
      {"pack.json", R"({"name": "crash", "tools": {"writes": ["ship", "refund"]},
                        "unknown_tools": "deny"})"},
      {"crash.lua", R"(
rule {
  id = "crash.refund_needs_approval", tools = {"refund"},
  check = function(call, ledger) return require_approval("refunds need an operator") end,
})"}};
  auto pack = RulePack::FromFiles(std::move(files));
  if (!pack) {
    std::fprintf(stderr, "pack: %s\n", pack.error().ToString().c_str());
    std::exit(2);
  }
  return std::move(pack).value();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s REDIS_URL EFFECTS_DIR RUN STEPS\n", argv[0]);
    return 2;
  }
  if (const char* p = std::getenv("TL_CRASH_POINT")) g_point = p;
  if (const char* s = std::getenv("TL_CRASH_STEP")) g_step = std::atoi(s);
  const std::string url = argv[1];
  testing::FileEffectService service(argv[2]);
  const ConversationId conversation{"session-crash", argv[3]};
  const int steps = std::atoi(argv[4]);

  auto store = OpenStore(url);
  RedisOptions redis;
  redis.url = url;
  auto commands = OpenRedisCommandStore(redis);
  if (!store || !commands) {
    std::fprintf(stderr, "open: %s\n",
                 (!store ? store.error() : commands.error()).ToString().c_str());
    return 2;
  }
  SessionOptions options;
  options.commands.store = commands->get();
  options.commands.max_attempts = 20;
  options.commands.lease_ms = 60'000;
  options.commands.target_of = [&](const ProposedCall& c) {
    return conversation.conversation + "/item-" + std::to_string(StepOf(c.arguments));
  };
  options.commands.lookup = [&](const Command& c) {
    auto e = service.Lookup(c.idempotency_key);
    if (!e) return LookupResult::NotFound();
    return LookupResult::Found(e->external_id, {{"id", e->external_id}, {"target", e->target}});
  };
  options.commands.observer = [](std::string_view point, const Command& c) {
    const int step = StepOf(c.call.arguments);
    if (point == "reserved") {
      MaybeDie(c.state == CommandState::kBlocked ? "after_blocked" : "after_reserve", step);
    }
    if (point == "leased") MaybeDie("after_lease", step);
    if (point == "outcome") MaybeDie("after_outcome", step);
    if (point == "settle_sent") MaybeDie("after_settle_sent", step);
  };
  auto opened = Session::Open(**store, conversation, Pack(), options);  // runs the startup guard
  if (!opened) {
    std::fprintf(stderr, "open session: %s\n", opened.error().ToString().c_str());
    return 2;
  }
  Session& session = **opened;
  ContextToolExecutor execute = [&](const ProposedCall& call,
                                    const ToolContext& ctx) -> Result<ToolOutput> {
    const int step = StepOf(call.arguments);
    MaybeDie("during_call", step);
    auto id = service.Apply(ctx.idempotency_key,
                            conversation.conversation + "/item-" + std::to_string(step));
    MaybeDie("after_effect", step);
    if (!id) return Status::Timeout("the effect store refused the write");
    return ToolOutput{{{"id", *id}}, false};
  };
  CommandLedgerOptions operator_options;
  operator_options.worker_id = "operator";
  CommandLedger operator_view(**commands, SystemClock(), operator_options);

  for (int k = 0; k < steps; ++k) {
    const bool refund = k % 3 == 2;
    ProposedCall call{"call-" + std::to_string(k), refund ? "refund" : "ship", {{"step", k}}};
    CallResult r = session.HandleToolCall(call, execute);
    if (refund && r.command && r.command->state == CommandState::kBlocked &&
        !r.command->escalated) {
      auto approved = operator_view.Approve(*session.run(), r.command->command_key, "operator",
                                            "crash harness approves");
      if (!approved) {
        std::fprintf(stderr, "approve: %s\n", approved.error().ToString().c_str());
        return 2;
      }
      MaybeDie("after_approve", k);
    }
    if (refund) {
      auto resumed = session.ResumeApproved(execute);
      if (!resumed) {
        std::fprintf(stderr, "resume: %s\n", resumed.error().ToString().c_str());
        return 2;
      }
    }
    if (k % 3 == 0) continue;  // the next ship goes behind this one's settle, same turn
    if (auto v = session.EndTurn(); !v) {
      std::fprintf(stderr, "end turn %d: %s\n", k, v.error().ToString().c_str());
      return 2;
    }
  }
  return 0;
}
