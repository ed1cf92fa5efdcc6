// Helpers shared by the Redis Cluster fault tests: a store on a cluster URL,
// conversations whose keys hash to the slots of a given node, and a call
// retried while a failover makes it Unavailable.
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

// Why a call failed (nullptr: it did not), for Status and Result<T> alike.
inline const Status* Failure(const Status& s) { return s.ok() ? nullptr : &s; }
template <typename T>
const Status* Failure(const Result<T>& r) {
  return r.has_value() ? nullptr : &r.error();
}

// Runs `call` up to `attempts` times while it fails. A call whose request was
// already out when a primary died is Unavailable, as on a single server; the
// next one waits for the new primary. Any other failure fails the test. The
// last result.
template <typename Call>
auto RetryWhileUnavailable(Call&& call, int attempts = 3) {
  auto result = call();
  for (int attempt = 1; Failure(result) != nullptr && attempt < attempts; ++attempt) {
    CHECK(Failure(result)->code() == StatusCode::kUnavailable);
    result = call();
  }
  return result;
}

}  // namespace taskledger::testing
