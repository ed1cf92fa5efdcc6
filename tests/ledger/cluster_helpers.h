// Helpers shared by the Redis Cluster fault tests: a store on a cluster URL,
// and conversations whose keys hash to the slots of a given node.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ledger/store_backends.h"
#include "support/redis_cluster.h"
#include "taskledger/redis/keys.h"
#include "taskledger/redis/slots.h"

namespace taskledger::testing {

// A Redis store on `url` (cluster_timeout 15 s, snapshots every 4 turns);
// `replicas`: how many replicas each write waits for.
inline std::unique_ptr<Store> OpenCluster(const std::string& url, uint32_t replicas = 0) {
  using namespace std::chrono_literals;
  RedisOptions r;
  r.url = url;
  r.cluster_timeout = 15s;
  r.replicas = replicas;
  r.store.snapshot_every = 4;
  auto store = OpenRedisStore(r);
  if (!store) FAIL("OpenRedisStore: " << store.error().ToString());
  return std::move(store.value());
}

// Conversations whose keys hash to slots served by `port`.
inline std::vector<ConversationId> ConversationsOn(RedisCluster& cluster, int port,
                                                   const std::string& tenant, int count) {
  std::vector<ConversationId> out;
  for (int i = 0; static_cast<int>(out.size()) < count; ++i) {
    ConversationId id{tenant, "c" + std::to_string(i)};
    if (cluster.PortOfSlot(internal::KeySlot(internal::TurnStreamKey(id))) == port) {
      out.push_back(id);
    }
  }
  return out;
}

}  // namespace taskledger::testing
