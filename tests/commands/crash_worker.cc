// The crash harness's worker: runs one run's workload of commands through the
// CommandLedger on Redis against the FileEffectService, after running the
// startup guard. For every step it draws a branch and asks a (fake,
// non-deterministic) model for a note through the Journal, so only a journal
// replay makes a restarted worker issue the same commands.
//
// usage: command_crash_worker REDIS_URL EFFECTS_DIR RUN COMMANDS
// env:   TL_CRASH_POINT=after_reserve|after_lease|during_call|after_effect|after_outcome
//        TL_CRASH_STEP=K   -> SIGKILL itself at that point of step K
// Exit: 0 when every command is terminal or escalated; 2 on a store error;
// 3 on a journal divergence.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "file_effect_service.h"
#include "taskledger/commands/command_ledger.h"
#include "taskledger/commands/journal.h"
#include "taskledger/commands/redis_command_store.h"

using namespace taskledger;

namespace {

std::string g_point;
std::string g_step;

void MaybeDie(std::string_view point, const std::string& step) {
  if (!g_point.empty() && point == g_point && step == g_step) ::raise(SIGKILL);
}

std::string StepName(int k) { return "step-" + std::to_string(k); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s REDIS_URL EFFECTS_DIR RUN COMMANDS\n", argv[0]);
    return 2;
  }
  if (const char* p = std::getenv("TL_CRASH_POINT")) g_point = p;
  if (const char* s = std::getenv("TL_CRASH_STEP")) g_step = StepName(std::atoi(s));
  RedisOptions options;
  options.url = argv[1];
  testing::FileEffectService service(argv[2]);
  RunId run{"crash", argv[3]};
  const int commands = std::atoi(argv[4]);

  auto store = OpenRedisCommandStore(options);
  if (!store) {
    std::fprintf(stderr, "open: %s\n", store.error().ToString().c_str());
    return 2;
  }
  CommandLedgerOptions ledger_options;
  ledger_options.worker_id = "worker-" + run.run;  // stable: a restart reclaims its own leases
  ledger_options.lease_ms = 60'000;
  ledger_options.max_attempts = 20;
  ledger_options.observer = [](std::string_view point, const Command& c) {
    if (point == "reserved") MaybeDie("after_reserve", c.step);
    if (point == "leased") MaybeDie("after_lease", c.step);
    if (point == "outcome") MaybeDie("after_outcome", c.step);
  };
  CommandLedger ledger(**store, SystemClock(), ledger_options);
  ToolBinding binding;
  binding.call = [&](const Command& c) {
    MaybeDie("during_call", c.step);
    auto id = service.Apply(c.idempotency_key, c.target);
    MaybeDie("after_effect", c.step);
    if (!id) return ToolOutcome::Ambiguous("effect store refused the write");
    return ToolOutcome::Succeeded(*id, {{"id", *id}, {"target", c.target}});
  };
  binding.lookup = [&](const Command& c) {
    auto e = service.Lookup(c.idempotency_key);
    if (!e) return LookupResult::NotFound();
    return LookupResult::Found(e->external_id, {{"id", e->external_id}, {"target", e->target}});
  };
  ledger.Bind("ship", binding);
  ledger.Bind("refund", binding);

  auto report = ledger.Recover(run);  // the startup guard, before any new work
  if (!report) {
    std::fprintf(stderr, "recover: %s\n", report.error().ToString().c_str());
    return 2;
  }

  std::random_device entropy;
  Journal journal(**store, run);
  for (int k = 0; k < commands; ++k) {
    auto draw = journal.Random([&] { return (uint64_t{entropy()} << 32) | entropy(); });
    if (!draw) {
      std::fprintf(stderr, "journal: %s\n", draw.error().ToString().c_str());
      return draw.error().code() == StatusCode::kDivergence ? 3 : 2;
    }
    auto note =
        journal.Completion({{"step", k}, {"branch", *draw % 2}}, [&]() -> Result<nlohmann::json> {
          return nlohmann::json{{"text", std::to_string(entropy())}};
        });
    if (!note) {
      std::fprintf(stderr, "journal: %s\n", note.error().ToString().c_str());
      return note.error().code() == StatusCode::kDivergence ? 3 : 2;
    }
    CommandSpec spec;
    spec.run = run;
    spec.step = StepName(k);
    spec.call.tool = *draw % 2 == 0 ? "ship" : "refund";
    spec.target = "item-" + run.run + "-" + std::to_string(k);
    spec.call.arguments = {{"note", (*note)["text"]}};
    spec.decision = {{"decision", "allow"}};
    auto done = ledger.Run(spec);
    if (!done) {
      std::fprintf(stderr, "run %s: %s\n", spec.step.c_str(), done.error().ToString().c_str());
      return 2;
    }
  }
  return 0;
}
