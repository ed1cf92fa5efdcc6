// The two Store implementations as test backends, so one contract suite (and
// the Ledger tests) run unchanged against MemoryStore and RedisStore, plus
// small builders for updates and turns.
//
// RedisBackend talks to SharedRedisUrl() (a real redis-server), ClusterBackend
// to SharedRedisClusterUrl() (a real 3-primary Redis Cluster); each gives every
// backend instance its own tenant prefix, so tests never see each other's
// keys; it drops what it wrote when destroyed. Time: both backends own a
// ManualClock; PassTime also sleeps for Redis, whose retention runs on the
// server's clock. Not thread-safe (one per test case).
#pragma once

#include <unistd.h>
#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "support/redis_cluster.h"
#include "support/redis_server.h"
#include "support/redis_tls.h"
#include "taskledger/base/clock.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/ledger/redis_store.h"
#include "taskledger/ledger/state.h"
#include "taskledger/ledger/store.h"

namespace taskledger::testing {

inline StoreOptions StoreOpts(uint32_t snapshot_every,
                              std::optional<std::chrono::seconds> retention = std::nullopt) {
  StoreOptions o;
  o.snapshot_every = snapshot_every;
  o.retention = retention;
  return o;
}

inline Update SetUpdate(Category c, std::string key, nlohmann::json value, bool verified = true) {
  Update u;
  u.op = UpdateOp::kSet;
  u.category = c;
  u.key = std::move(key);
  u.value = std::move(value);
  u.provenance.source = verified ? SourceKind::kToolOutput : SourceKind::kAgent;
  u.provenance.source_id = verified ? "lookup#c1" : "agent";
  u.provenance.verified = verified;
  return u;
}

inline Update RemoveUpdate(Category c, std::string key) {
  Update u;
  u.op = UpdateOp::kRemove;
  u.category = c;
  u.key = std::move(key);
  return u;
}

// Builds turn head.version+1 from `updates`, commits it, and on success
// advances `head` to the new state. Returns the store's status.
inline Status CommitNext(Store& store, const ConversationId& id, LedgerState& head,
                         std::vector<Update> updates, int64_t now_ms,
                         TurnRecord* committed = nullptr) {
  TurnRecord turn;
  turn.turn = head.version + 1;
  turn.committed_at_ms = now_ms;
  for (Update& u : updates) u.provenance.turn = turn.turn;
  turn.updates = std::move(updates);
  LedgerState after = head;
  if (Status s = ApplyTurn(after, turn); !s.ok()) return s;
  Status s = store.CommitTurn(id, turn, after);
  if (s.ok()) {
    head = std::move(after);
    if (committed) *committed = turn;
  }
  return s;
}

struct MemoryBackend {
  static constexpr bool kIsRedis = false;
  ManualClock clock;

  std::unique_ptr<Store> Open(StoreOptions options = {}) { return NewMemoryStore(options, clock); }
  ConversationId Id(const std::string& tenant, const std::string& conversation) {
    return {tenant, conversation};
  }
  std::string Tenant(const std::string& tenant) { return tenant; }
  void PassTime(std::chrono::milliseconds d) { clock.Advance(d.count()); }
};

template <std::string (*Url)()>
struct RedisBackendOn {
  static constexpr bool kIsRedis = true;
  ManualClock clock;
  std::string prefix = NextPrefix();
  std::set<std::string> tenants;
  std::unique_ptr<Store> cleanup;

  ~RedisBackendOn() {
    if (!cleanup) return;
    for (const std::string& t : tenants) {
      auto list = cleanup->ListConversations(t);
      if (!list) continue;
      for (const std::string& c : *list) (void)cleanup->DropConversation({t, c});
    }
  }

  std::unique_ptr<Store> Open(StoreOptions options = {}) {
    RedisOptions r;
    r.url = Url();
    r.store = options;
    auto store = OpenRedisStore(r, clock);
    if (!store) FAIL("OpenRedisStore: " << store.error().ToString());
    if (!cleanup) {
      auto c = OpenRedisStore(r, clock);
      if (c) cleanup = std::move(c.value());
    }
    return std::move(store.value());
  }
  ConversationId Id(const std::string& tenant, const std::string& conversation) {
    return {Tenant(tenant), conversation};
  }
  // The crafted part stays at the end of the tenant, where it matters.
  std::string Tenant(const std::string& tenant) {
    std::string t = prefix + tenant;
    tenants.insert(t);
    return t;
  }
  void PassTime(std::chrono::milliseconds d) {
    clock.Advance(d.count());
    std::this_thread::sleep_for(d);
  }

  static std::string NextPrefix() {
    static std::atomic<int> counter{0};
    return "t" + std::to_string(getpid()) + "x" + std::to_string(counter++) + "-";
  }
};
using RedisBackend = RedisBackendOn<&SharedRedisUrl>;
using ClusterBackend = RedisBackendOn<&SharedRedisClusterUrl>;
using TlsBackend = RedisBackendOn<&SharedTlsRedisUrl>;

}  // namespace taskledger::testing
