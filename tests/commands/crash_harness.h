// The process side of the SIGKILL crash harnesses (command ledger and Session
// loop): launching a worker process with a scripted crash point or a random
// kill, tallying how each one ended, reading the fake external system back,
// and printing the driver's summary. What each driver checks afterwards (its
// invariants over the stored commands) stays in that driver.
//
// A worker is exec'd as `WORKER URL EFFECTS_DIR RUN STEPS` with TL_CRASH_POINT
// and TL_CRASH_STEP set for a scripted crash (the worker kills itself there).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace taskledger::testing {

struct CrashLaunch {
  std::string point;  // empty: no scripted kill
  int step = 0;
  int random_kill_after_us = -1;  // >= 0: the driver kills it after this delay
};

// Runs one worker to its end; returns its wait status.
int RunCrashWorker(const std::string& binary, const std::string& url,
                   const std::string& effects_dir, const std::string& run, int steps,
                   const CrashLaunch& launch);

// How the workers ended: SIGKILLed (per point, "random" for timed kills) or
// failed (any other end than exit 0).
struct CrashTally {
  int kills = 0;
  int failed_workers = 0;
  std::map<std::string, int> kills_by_point;

  void Count(const CrashLaunch& launch, int wait_status);
  bool EveryPointHit(const std::vector<std::string>& points) const;
};

// The effects the fake external system holds (FileEffectService in DIR).
struct EffectsSeen {
  std::map<std::string, int> by_target;                   // natural key -> times applied
  std::map<std::string, std::string> external_id_by_key;  // idempotency key -> external id
  int duplicates = 0;                                     // sum over targets of (n - 1)
};
EffectsSeen ReadEffects(const std::string& dir);

// A fresh directory for a run's effects: /tmp/PREFIX-XXXXXX. Throws on failure.
std::string MakeEffectsDir(const std::string& prefix);

// Prints the human summary lines, then `summary` as the last line (JSON).
void PrintCrashSummary(size_t runs, int steps, double seconds, int escalated,
                       const CrashTally& tally, const nlohmann::ordered_json& summary);

}  // namespace taskledger::testing
