// Shared fixtures of the command tests: the two CommandStore implementations
// behind one factory (so every contract case runs on both, and on a Redis
// Cluster in the cluster build: "cluster"), a private redis-server with a
// store on it, unique runs per test (the Redis tests share one server), a
// helper that drives a fresh command into any state through allowed
// transitions only, and one that takes a leased command over for another
// worker.
// Not thread-safe (test main thread only).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "support/redis_cluster.h"
#include "support/redis_server.h"
#include "taskledger/commands/command_store.h"
#include "taskledger/commands/memory_command_store.h"
#include "taskledger/commands/redis_command_store.h"

namespace taskledger::testing {

inline std::unique_ptr<CommandStore> MakeCommandStore(const std::string& kind) {
  if (kind == "memory") return NewMemoryCommandStore();
  RedisOptions options;
  options.url = kind == "cluster" ? SharedRedisClusterUrl() : SharedRedisUrl();
  auto store = OpenRedisCommandStore(options);
  if (!store) FAIL("cannot open the Redis command store: " << store.error().ToString());
  return std::move(store).value();
}

// A private redis-server, for a test that damages, rewrites or reloads what a
// server holds (the shared one serves every other test), with its URL in
// `options` and, from OwnRedisCommandStore, a command store opened on it.
// `server` is the first member, so it outlives the stores.
struct OwnRedis {
  std::unique_ptr<RedisServer> server;
  RedisOptions options;
  std::unique_ptr<CommandStore> commands;  // OwnRedisCommandStore's
};

// Starts the server; `options` with its URL set.
inline OwnRedis OwnRedisServer(RedisOptions options = {}) {
  OwnRedis own;
  own.server = RedisServer::Start();
  options.url = own.server->url();
  own.options = std::move(options);
  return own;
}

inline OwnRedis OwnRedisCommandStore() {
  OwnRedis own = OwnRedisServer();
  auto store = OpenRedisCommandStore(own.options);
  if (!store) FAIL("cannot open the Redis command store: " << store.error().ToString());
  own.commands = std::move(store).value();
  return own;
}

// A run no other test (or earlier process) uses: odd bytes in the tenant too,
// so hash-tag encoding is exercised everywhere.
inline RunId FreshRun(const std::string& name) {
  static std::atomic<int> counter{0};
  return RunId{"t{:}" + std::to_string(::getpid()), name + "-" + std::to_string(++counter)};
}

inline CommandSpec SpecFor(const RunId& run, const std::string& step, bool approval = false) {
  CommandSpec spec;
  spec.run = run;
  spec.step = step;
  spec.call.tool = "issue_refund";
  spec.target = "order:" + step;
  spec.call.arguments = {{"order_id", step}, {"amount", 12.5}};
  spec.decision = {{"decision", approval ? "require_approval" : "allow"}};
  spec.pack_version = "pack-1";
  spec.requires_approval = approval;
  return spec;
}

inline constexpr int64_t kNow = 1'700'000'000'000;
inline constexpr int64_t kLeaseMs = 10'000;

// A request for `t` on `c` that passes every guard except the state check.
inline TransitionRequest ValidRequest(const Command& c, Transition t) {
  TransitionRequest r;
  r.run = c.run;
  r.command_key = c.command_key;
  r.transition = t;
  r.now_ms = kNow + 1;
  r.fencing_token = c.fencing_token;
  r.owner = c.lease_owner.empty() ? "worker-a" : c.lease_owner;
  r.lease_ms = kLeaseMs;
  r.external_id = "ext-1";
  r.evidence = {{"status", "done"}};
  r.error = "boom";
  r.actor = "alice";
  r.reason = "because";
  r.max_attempts = 100;
  r.replay.max_attempts_per_command = 100;
  return r;
}

// Reserves a fresh command and moves it to `state` along allowed edges.
inline Command DriveTo(CommandStore& store, const RunId& run, CommandState state,
                       const std::string& step = "s") {
  using S = CommandState;
  bool approval = state == S::kBlocked || state == S::kApproved;
  auto initial = NewCommand(SpecFor(run, step, approval), kNow);
  REQUIRE(initial.has_value());
  auto reserved = store.Reserve(*initial);
  REQUIRE(reserved.has_value());
  Command c = reserved->command;
  auto step_to = [&](Transition t) {
    auto next = store.Apply(ValidRequest(c, t));
    INFO(TransitionName(t) << ": " << next.status().ToString());
    REQUIRE(next.has_value());
    c = *next;
  };
  switch (state) {
    case S::kPending:
    case S::kBlocked:
      break;
    case S::kApproved:
      step_to(Transition::kApprove);
      break;
    case S::kLeased:
      step_to(Transition::kLease);
      break;
    case S::kSucceeded:
      step_to(Transition::kLease);
      step_to(Transition::kSucceed);
      break;
    case S::kFailed:
      step_to(Transition::kLease);
      step_to(Transition::kFail);
      break;
    case S::kUncertain:
      step_to(Transition::kLease);
      step_to(Transition::kMarkUncertain);
      break;
    case S::kCancelled:
      step_to(Transition::kCancel);
      break;
  }
  REQUIRE(c.state == state);
  return c;
}

// Another worker `owner` takes over `leased` (a command in state leased) the
// way a reclaimer does: expire the lease at `now` (at or after its expiry),
// release the now-uncertain command, lease it again. Returns the new lease.
inline Command TakeOver(CommandStore& store, const Command& leased, const std::string& owner,
                        int64_t now) {
  TransitionRequest expire = ValidRequest(leased, Transition::kExpireLease);
  expire.owner = owner;
  expire.now_ms = now;
  REQUIRE(store.Apply(expire).has_value());
  auto released =
      store.Apply(ValidRequest(*store.Get(leased.run, leased.command_key), Transition::kRelease));
  REQUIRE(released.has_value());
  TransitionRequest lease = ValidRequest(*released, Transition::kLease);
  lease.owner = owner;
  auto taken = store.Apply(lease);
  REQUIRE(taken.has_value());
  return *taken;
}

}  // namespace taskledger::testing
