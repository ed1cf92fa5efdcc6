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
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "file_effect_service.h"
#include "support/redis_server.h"
#include "taskledger/commands/journal.h"
#include "taskledger/commands/redis_command_store.h"

using namespace taskledger;

namespace {

constexpr int kStepsPerRun = 6;

struct Launch {
  std::string point;  // empty: no scripted kill
  int step = 0;
  int random_kill_after_us = -1;  // >= 0: the driver kills it after this delay
};

// Returns the wait status of one worker process.
int RunWorker(const std::string& binary, const std::string& url, const std::string& effects,
              const std::string& run, const Launch& launch) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!launch.point.empty()) {
      ::setenv("TL_CRASH_POINT", launch.point.c_str(), 1);
      ::setenv("TL_CRASH_STEP", std::to_string(launch.step).c_str(), 1);
    } else {
      ::unsetenv("TL_CRASH_POINT");
    }
    std::string steps = std::to_string(kStepsPerRun);
    ::execl(binary.c_str(), binary.c_str(), url.c_str(), effects.c_str(), run.c_str(),
            steps.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  if (launch.random_kill_after_us >= 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(launch.random_kill_after_us));
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

bool KilledBySigkill(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL; }

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
    char effects_template[] = "/tmp/taskledger-crash-XXXXXX";
    if (::mkdtemp(effects_template) == nullptr) throw std::runtime_error("mkdtemp failed");
    const std::string effects = effects_template;
    std::mt19937 rng(12345);
    const std::vector<std::string> kPoints = {"after_reserve", "after_lease", "during_call",
                                              "after_effect", "after_outcome"};
    std::map<std::string, int> kills_by_point;
    int kills = 0, failed_workers = 0;
    std::vector<std::string> runs;
    auto start = std::chrono::steady_clock::now();

    while (kills < target_kills) {
      const std::string run = "run-" + std::to_string(runs.size() + 1);
      runs.push_back(run);
      std::vector<Launch> schedule;
      for (int k = 0; k < kStepsPerRun; ++k) {
        // Reachable in this order for one step; the fourth alternates between
        // "effect applied, outcome unrecorded" and "outcome recorded".
        for (const char* p : {"after_reserve", "after_lease", "during_call"}) {
          schedule.push_back({p, k, -1});
        }
        schedule.push_back({k % 2 == 0 ? "after_effect" : "after_outcome", k, -1});
        schedule.push_back({"", 0, static_cast<int>(rng() % 20000)});
      }
      for (const Launch& launch : schedule) {
        int status = RunWorker(worker, redis->url(), effects, run, launch);
        if (KilledBySigkill(status)) {
          ++kills;
          ++kills_by_point[launch.point.empty() ? "random" : launch.point];
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
          ++failed_workers;
        }
      }
      int final_status = RunWorker(worker, redis->url(), effects, run, Launch{});
      if (!WIFEXITED(final_status) || WEXITSTATUS(final_status) != 0) ++failed_workers;
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    // The evidence.
    RedisOptions options;
    options.url = redis->url();
    auto store = OpenRedisCommandStore(options);
    if (!store) throw std::runtime_error(store.error().ToString());
    testing::FileEffectService service(effects);
    std::map<std::string, int> effects_by_target;
    std::map<std::string, std::string> effect_by_key;
    for (const auto& e : service.All()) {
      ++effects_by_target[e.target];
      effect_by_key[e.idempotency_key] = e.external_id;
    }
    int duplicate_effects = 0, lost = 0, unresolved = 0, divergent = 0, escalated = 0;
    int unevidenced = 0;
    for (const auto& [target, n] : effects_by_target) duplicate_effects += n - 1;
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
            if (c.tool != branch) ++divergent;
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

    std::printf("runs=%zu steps/run=%d seconds=%.1f failed_workers=%d escalated=%d\n", runs.size(),
                kStepsPerRun, seconds, failed_workers, escalated);
    for (const auto& [point, n] : kills_by_point)
      std::printf("  kills at %s: %d\n", point.c_str(), n);
    bool every_point = true;
    for (const auto& p : kPoints) every_point = every_point && kills_by_point[p] > 0;
    nlohmann::ordered_json summary = {{"kills", kills},
                                      {"duplicate_effects", duplicate_effects},
                                      {"lost_commands", lost},
                                      {"unresolved", unresolved},
                                      {"divergent_branches", divergent},
                                      {"unevidenced_successes", unevidenced},
                                      {"failed_workers", failed_workers}};
    std::printf("%s\n", summary.dump().c_str());
    bool pass = kills >= target_kills && every_point && duplicate_effects == 0 && lost == 0 &&
                unresolved == 0 && divergent == 0 && unevidenced == 0 && failed_workers == 0;
    return pass ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "crash harness: %s\n", e.what());
    return 2;
  }
}
