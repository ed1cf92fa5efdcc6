// The session crash harness's driver: starts a real redis-server, then for
// run after run launches session_crash_worker (an agent loop through
// Session) and SIGKILLs it at every point of a write (after reserve, after
// lease, during the call, after the external effect but before the outcome,
// after the outcome was sent but before its answer was read (a deferred
// settle), after the outcome) and of an approval (after the command is reserved
// blocked, after the operator approved it, then the write's points), plus
// random-time kills, and finally lets a worker finish. Then it checks the
// evidence: no effect applied twice per item, every step's command present
// (none lost), every command succeeded or escalated to a human, and every
// success backed by the external system's record. Last line of output is JSON:
//   {"kills":…,"duplicate_effects":…,"lost_commands":…,"unresolved":…,…}
//
// usage: session_crash_driver WORKER_BINARY [KILLS=200]
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

#include "commands/crash_harness.h"
#include "support/redis_server.h"
#include "taskledger/commands/redis_command_store.h"

using namespace taskledger;

namespace {

// In threes: two ships back to back (the second behind the first's unread
// settle), then a refund (approval); session_crash_worker.cc.
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
    const std::string effects = testing::MakeEffectsDir("taskledger-session-crash");
    std::mt19937 rng(20);
    const std::vector<std::string> kPoints = {"after_reserve", "after_lease",      "during_call",
                                              "after_effect",  "after_outcome",    "after_blocked",
                                              "after_approve", "after_settle_sent"};
    testing::CrashTally tally;
    std::vector<std::string> runs;
    auto start = std::chrono::steady_clock::now();

    while (tally.kills < target_kills) {
      const std::string run = "run-" + std::to_string(runs.size() + 1);
      runs.push_back(run);
      std::vector<testing::CrashLaunch> schedule;
      for (int k = 0; k < kStepsPerRun; ++k) {
        std::vector<const char*> points = {"after_reserve", "after_lease", "during_call"};
        const bool ship = k % 3 != 2;
        if (!ship) points = {"after_blocked", "after_approve", "after_lease", "during_call"};
        for (const char* p : points) schedule.push_back({p, k, -1});
        // The last one leaves the step's effect made (a worker killed later
        // in a step finds it done, so one such point per step): "effect
        // applied, outcome unrecorded", for a ship (whose settle is deferred)
        // "settle sent, its answer unread", and "outcome recorded, turn not
        // committed", in turn. Rotated by run, so that over three runs each
        // of them lands on the first ship of a pair and on the second (the
        // write sent behind the first one's unread settle).
        static constexpr const char* kShipLast[] = {"after_effect", "after_settle_sent",
                                                    "after_outcome"};
        const char* last = (k / 2) % 2 == 0 ? "after_effect" : "after_outcome";
        if (ship) last = kShipLast[(runs.size() + 2 * (k / 3) + k % 3) % 3];
        schedule.push_back({last, k, -1});
      }
      // A second run of its own is killed at random times instead (a loop
      // this fast would finish a scripted run between two random kills).
      const std::string random_run = run + "-random";
      runs.push_back(random_run);
      std::vector<std::pair<std::string, testing::CrashLaunch>> launches;
      launches.reserve(schedule.size() + 5);
      for (const testing::CrashLaunch& launch : schedule) launches.emplace_back(run, launch);
      for (int i = 0; i < 3; ++i) {
        launches.emplace_back(random_run,
                              testing::CrashLaunch{"", 0, static_cast<int>(rng() % 15000)});
      }
      launches.emplace_back(run, testing::CrashLaunch{});  // the final, clean workers
      launches.emplace_back(random_run, testing::CrashLaunch{});
      for (const auto& [which, launch] : launches) {
        tally.Count(launch, testing::RunCrashWorker(worker, redis->url(), effects, which,
                                                    kStepsPerRun, launch));
      }
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    RedisOptions options;
    options.url = redis->url();
    auto store = OpenRedisCommandStore(options);
    if (!store) throw std::runtime_error(store.error().ToString());
    const testing::EffectsSeen seen = testing::ReadEffects(effects);
    const auto& effect_by_key = seen.external_id_by_key;
    const int duplicate_effects = seen.duplicates;
    int lost = 0, unresolved = 0, duplicated_commands = 0, escalated = 0, unevidenced = 0;
    for (const std::string& run : runs) {
      auto commands = (*store)->ListCommands(RunId{"session-crash", run});
      if (!commands) throw std::runtime_error(commands.error().ToString());
      std::map<std::string, std::vector<Command>> by_target;
      for (const Command& c : *commands) by_target[c.target].push_back(c);
      for (int k = 0; k < kStepsPerRun; ++k) {
        auto it = by_target.find(run + "/item-" + std::to_string(k));
        if (it == by_target.end()) {
          ++lost;
          continue;
        }
        duplicated_commands += static_cast<int>(it->second.size()) - 1;
        for (const Command& c : it->second) {
          if (c.state == CommandState::kBlocked && c.escalated) {
            ++escalated;
          } else if (c.state != CommandState::kSucceeded) {
            ++unresolved;
          }
          // A recorded success must be backed by the external system's record,
          // named by the command's evidence (the tool's output, or a lookup).
          if (c.state == CommandState::kSucceeded) {
            auto e = effect_by_key.find(c.idempotency_key);
            const nlohmann::json& ev = c.evidence;
            std::string named = ev.contains("output")   ? ev["output"].value("id", "")
                                : ev.contains("lookup") ? ev["lookup"].value("id", "")
                                                        : "";
            if (e == effect_by_key.end() || e->second != named) ++unevidenced;
          }
        }
      }
    }
    std::filesystem::remove_all(effects);

    nlohmann::ordered_json summary = {{"kills", tally.kills},
                                      {"duplicate_effects", duplicate_effects},
                                      {"lost_commands", lost},
                                      {"unresolved", unresolved},
                                      {"duplicated_commands", duplicated_commands},
                                      {"unevidenced_successes", unevidenced},
                                      {"failed_workers", tally.failed_workers}};
    testing::PrintCrashSummary(runs.size(), kStepsPerRun, seconds, escalated, tally, summary);
    bool pass = tally.kills >= target_kills && tally.EveryPointHit(kPoints) &&
                duplicate_effects == 0 && lost == 0 && unresolved == 0 &&
                duplicated_commands == 0 && unevidenced == 0 && tally.failed_workers == 0;
    return pass ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "session crash harness: %s\n", e.what());
    return 2;
  }
}
