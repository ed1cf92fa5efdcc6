// The command ledger over RedisCommandStore while redis-server is killed with
// -9 and restarted (appendfsync always) in the middle of a multi-threaded
// workload of environment-changing calls (ctest label `fault`). What must
// hold: every command a worker saw succeed is still recorded as succeeded,
// every command eventually succeeds, the external system applied each effect
// exactly once, and every worker recovers through Recover alone.
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "reliability/workload.h"
#include "support/redis_server.h"
#include "taskledger/commands/command_ledger.h"
#include "taskledger/commands/redis_command_store.h"

using namespace taskledger;
using namespace taskledger::testing;
using namespace std::chrono_literals;
using Clock_ = std::chrono::steady_clock;

namespace {

// An external payment system honouring idempotency keys. Thread-safe.
class RefundSystem {
 public:
  ToolBinding Binding() {
    return ToolBinding{[this](const Command& c) {
                         std::lock_guard<std::mutex> lock(mu_);
                         auto [it, fresh] = by_key_.emplace(c.idempotency_key, "ext-" + c.target);
                         if (fresh) ++effects_[c.target];
                         return ToolOutcome::Succeeded(it->second, {{"refund", it->second}});
                       },
                       [this](const Command& c) {
                         std::lock_guard<std::mutex> lock(mu_);
                         auto it = by_key_.find(c.idempotency_key);
                         if (it == by_key_.end()) return LookupResult::NotFound();
                         return LookupResult::Found(it->second, {{"refund", it->second}});
                       }};
  }
  std::map<std::string, int> effects() const {
    std::lock_guard<std::mutex> lock(mu_);
    return effects_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> by_key_;
  std::map<std::string, int> effects_;  // per target: how many times the money moved
};

struct WorkerReport {
  std::set<std::string> acknowledged;  // command keys seen succeeded
  int retries = 0;
  std::string error;
};

CommandSpec RefundSpec(int worker, int i) {
  CommandSpec spec;
  spec.run = RunId{"fault", "run-" + std::to_string(worker)};
  spec.step = "refund-" + std::to_string(i);
  spec.call.tool = "refund";
  spec.target = "order:" + std::to_string(worker) + "-" + std::to_string(i);
  spec.call.arguments = {{"amount", i}};
  return spec;
}

void RunWorker(CommandStore& store, RefundSystem& system, int worker, int commands,
               Clock_::time_point deadline, WorkerReport& report) {
  CommandLedgerOptions options;
  options.worker_id = "worker-" + std::to_string(worker);
  options.lease_ms = 2'000;
  options.max_attempts = 10;
  CommandLedger ledger(store, SystemClock(), options);
  ledger.Bind("refund", system.Binding());
  const RunId run{"fault", "run-" + std::to_string(worker)};
  for (int i = 1; i <= commands; ++i) {
    const CommandSpec spec = RefundSpec(worker, i);
    while (true) {
      if (Clock_::now() > deadline) {
        report.error = "deadline passed at command " + std::to_string(i);
        return;
      }
      auto c = ledger.Run(spec);
      if (c.has_value() && c.value().state == CommandState::kSucceeded) {
        report.acknowledged.insert(c.value().command_key);
        break;
      }
      if (!c.has_value() && !StoreDown(c.error())) {
        report.error = "Run " + spec.step + ": " + c.error().ToString();
        return;
      }
      // Redis was down somewhere in the protocol, or the command was left
      // leased or uncertain by an attempt that lost its store: the startup
      // guard sorts it out by evidence, then the command runs again.
      ++report.retries;
      std::this_thread::sleep_for(20ms);
      auto recovered = ledger.Recover(run);
      if (!recovered.has_value() && !StoreDown(recovered.error())) {
        report.error = "Recover: " + recovered.error().ToString();
        return;
      }
    }
  }
}

}  // namespace

TEST_CASE("fault: kill -9 of redis-server during a command workload loses and repeats nothing",
          "[reliability][fault]") {
  auto server = RedisServer::Start();
  auto store = OpenRedisCommandStore(RedisOpts(server->url(), 500ms));
  REQUIRE(store.has_value());
  RefundSystem system;
  constexpr int kWorkers = 3;
  constexpr int kCommands = 600;  // long enough that three kills land mid-workload
  const auto deadline = Clock_::now() + 90s;
  std::vector<WorkerReport> reports(kWorkers);
  const int kills = RunWhileKilling(*server, kWorkers, 3, [&](int w) {
    RunWorker(*store.value(), system, w, kCommands, deadline, reports[w]);
  });

  auto fresh = OpenRedisCommandStore(RedisOpts(server->url(), 1000ms));
  REQUIRE(fresh.has_value());
  const std::map<std::string, int> effects = system.effects();
  int retries = 0;
  for (int w = 0; w < kWorkers; ++w) {
    INFO("worker " << w << " error: " << reports[w].error);
    CHECK(reports[w].error.empty());
    CHECK(reports[w].acknowledged.size() == static_cast<size_t>(kCommands));
    auto commands = fresh.value()->ListCommands(RunId{"fault", "run-" + std::to_string(w)});
    REQUIRE(commands.has_value());
    CHECK(commands.value().size() == static_cast<size_t>(kCommands));
    for (const Command& c : commands.value()) {
      INFO(c.command_key);
      CHECK(c.state == CommandState::kSucceeded);
      CHECK_FALSE(c.external_id.empty());
      CHECK(effects.count(c.target) == 1);
      if (effects.count(c.target)) CHECK(effects.at(c.target) == 1);
      reports[w].acknowledged.erase(c.command_key);
    }
    // Every acknowledged command is among the stored, succeeded ones.
    CHECK(reports[w].acknowledged.empty());
    retries += reports[w].retries;
  }
  CHECK(effects.size() == static_cast<size_t>(kWorkers * kCommands));
  // The kills really landed in the middle of the workload.
  CHECK(kills == 3);
  CHECK(retries > 0);
}
