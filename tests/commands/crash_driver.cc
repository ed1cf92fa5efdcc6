// The crash harness's driver: starts a real redis-server, then for run after
// run launches command_crash_worker and SIGKILLs it at every point of the
// protocol (after reserve, after lease, during the call, after the external
// effect but before the outcome, after the outcome; each step of a run gets
// four of them) plus random-time kills, and finally lets a worker finish.
// Then it checks the evidence: no effect applied twice per natural key, no
// command lost, every command terminal or escalated, and every step's command
// on the branch its journal recorded. Last line of output is JSON:
//   {"kills":…,"duplicate_effects":…,"lost_commands":…,"unresolved":…,…}
//
// usage: command_crash_driver WORKER_BINARY [KILLS=200]
// Exit 0 when the kills reached KILLS, every point was hit, and every count is 0.
#include <cstdlib>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crash_harness.h"
#include "support/redis_server.h"
#include "taskledger/commands/journal.h"
#include "taskledger/commands/redis_command_store.h"

using namespace taskledger;

namespace {

constexpr int kStepsPerRun = 6;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s WORKER_BINARY [KILLS]\n", argv[0]);
    return 2;
  }
  const std::string worker = argv[1];
  const int target_kills = argc > 2 ? std::atoi(argv[2]) : 200;
  try {
    auto redis = testing::RedisServer::Start();
    const std::string effects = testing::MakeEffectsDir("taskledger-crash");
    std::mt19937 rng(12345);
    const std::vector<std::string> kPoints = {"after_reserve", "after_lease", "during_call",
                                              "after_effect", "after_outcome"};
    testing::CrashTally tally;
    std::vector<std::string> runs;
    auto start = std::chrono::steady_clock::now();

    while (tally.kills < target_kills) {
      const std::string run = "run-" + std::to_string(runs.size() + 1);
      runs.push_back(run);
      std::vector<testing::CrashLaunch> schedule;
      for (int k = 0; k < kStepsPerRun; ++k) {
        // Reachable in this order for one step; the fourth alternates between
        // "effect applied, outcome unrecorded" and "outcome recorded".
        for (const char* p : {"after_reserve", "after_lease", "during_call"}) {
          schedule.push_back({p, k, -1});
        }
        schedule.push_back({k % 2 == 0 ? "after_effect" : "after_outcome", k, -1});
        schedule.push_back({"", 0, static_cast<int>(rng() % 20000)});
      }
      schedule.push_back({});  // the final, clean worker
      for (const testing::CrashLaunch& launch : schedule) {
        tally.Count(launch, testing::RunCrashWorker(worker, redis->url(), effects, run,
                                                    kStepsPerRun, launch));
      }
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    // The evidence.
    RedisOptions options;
    options.url = redis->url();
    auto store = OpenRedisCommandStore(options);
    if (!store) throw std::runtime_error(store.error().ToString());
    const testing::EffectsSeen seen = testing::ReadEffects(effects);
    const auto& effect_by_key = seen.external_id_by_key;
    const int duplicate_effects = seen.duplicates;
    int lost = 0, unresolved = 0, divergent = 0, escalated = 0, unevidenced = 0;
    for (const std::string& run : runs) {
      RunId id{"crash", run};
      auto commands = (*store)->ListCommands(id);
      if (!commands) throw std::runtime_error(commands.error().ToString());
      std::map<std::string, std::vector<Command>> by_step;
      for (const Command& c : *commands) by_step[c.step].push_back(c);
      for (int k = 0; k < kStepsPerRun; ++k) {
        const std::string step = "step-" + std::to_string(k);
        // The journal: position 2k+1 is step k's branch draw.
        auto entry = (*store)->GetJournalEntry(id, 2 * static_cast<uint64_t>(k) + 1);
        if (!entry) throw std::runtime_error(entry.error().ToString());
        bool drawn = entry->has_value() && (**entry).kind == "random" &&
                     (**entry).value.is_number_unsigned();
        auto it = by_step.find(step);
        if (it == by_step.end()) {
          ++lost;
          continue;
        }
        divergent += static_cast<int>(it->second.size()) - 1;  // two branches taken
        if (!drawn) ++divergent;                               // no recorded draw
        for (const Command& c : it->second) {
          if (drawn) {
            std::string branch = (**entry).value.get<uint64_t>() % 2 == 0 ? "ship" : "refund";
            if (c.call.tool != branch) ++divergent;
          }
          if (c.state == CommandState::kBlocked && c.escalated) {
            ++escalated;
          } else if (!IsTerminal(c.state)) {
            ++unresolved;
          }
          // A recorded success must be backed by the external system's record.
          if (c.state == CommandState::kSucceeded) {
            auto e = effect_by_key.find(c.idempotency_key);
            if (e == effect_by_key.end() || e->second != c.external_id) ++unevidenced;
          }
        }
      }
    }
    std::filesystem::remove_all(effects);

    nlohmann::ordered_json summary = {{"kills", tally.kills},
                                      {"duplicate_effects", duplicate_effects},
                                      {"lost_commands", lost},
                                      {"unresolved", unresolved},
                                      {"divergent_branches", divergent},
                                      {"unevidenced_successes", unevidenced},
                                      {"failed_workers", tally.failed_workers}};
    testing::PrintCrashSummary(runs.size(), kStepsPerRun, seconds, escalated, tally, summary);
    bool pass = tally.kills >= target_kills && tally.EveryPointHit(kPoints) &&
                duplicate_effects == 0 && lost == 0 && unresolved == 0 && divergent == 0 &&
                unevidenced == 0 && tally.failed_workers == 0;
    return pass ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "crash harness: %s\n", e.what());
    return 2;
  }
}
