// The crash harnesses' shared process code: fork/exec of a worker with its
// crash point in the environment, the kill timer, the tally of exits, and
// reading the fake external system back (see crash_harness.h).
#include "crash_harness.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "file_effect_service.h"

namespace taskledger::testing {

int RunCrashWorker(const std::string& binary, const std::string& url,
                   const std::string& effects_dir, const std::string& run, int steps,
                   const CrashLaunch& launch) {
  const std::string steps_arg = std::to_string(steps);
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (!launch.point.empty()) {
      ::setenv("TL_CRASH_POINT", launch.point.c_str(), 1);
      ::setenv("TL_CRASH_STEP", std::to_string(launch.step).c_str(), 1);
    } else {
      ::unsetenv("TL_CRASH_POINT");
    }
    ::execl(binary.c_str(), binary.c_str(), url.c_str(), effects_dir.c_str(), run.c_str(),
            steps_arg.c_str(), static_cast<char*>(nullptr));
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

void CrashTally::Count(const CrashLaunch& launch, int wait_status) {
  if (WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == SIGKILL) {
    ++kills;
    ++kills_by_point[launch.point.empty() ? "random" : launch.point];
  } else if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    ++failed_workers;
  }
}

bool CrashTally::EveryPointHit(const std::vector<std::string>& points) const {
  for (const auto& p : points) {
    auto it = kills_by_point.find(p);
    if (it == kills_by_point.end() || it->second == 0) return false;
  }
  return true;
}

EffectsSeen ReadEffects(const std::string& dir) {
  EffectsSeen seen;
  for (const auto& e : FileEffectService(dir).All()) {
    ++seen.by_target[e.target];
    seen.external_id_by_key[e.idempotency_key] = e.external_id;
  }
  for (const auto& [target, n] : seen.by_target) seen.duplicates += n - 1;
  return seen;
}

std::string MakeEffectsDir(const std::string& prefix) {
  std::string path = "/tmp/" + prefix + "-XXXXXX";
  if (::mkdtemp(path.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return path;
}

void PrintCrashSummary(size_t runs, int steps, double seconds, int escalated,
                       const CrashTally& tally, const nlohmann::ordered_json& summary) {
  std::printf("runs=%zu steps/run=%d seconds=%.1f failed_workers=%d escalated=%d\n", runs, steps,
              seconds, tally.failed_workers, escalated);
  for (const auto& [point, n] : tally.kills_by_point) {
    std::printf("  kills at %s: %d\n", point.c_str(), n);
  }
  std::printf("%s\n", summary.dump().c_str());
}

}  // namespace taskledger::testing
