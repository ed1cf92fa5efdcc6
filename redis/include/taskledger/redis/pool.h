// RedisPool: a small pool of RedisClients for one endpoint, so each thread
// using a store holds its own connection for the length of a call.
//
// Lease() hands out an idle client (or a new, not-yet-connected one); the
// lease returns it on destruction. Clients come back even after a transport
// failure: a broken client reconnects on its next call. At most `max_idle`
// clients are kept; extra ones are closed when returned. Clear() closes the
// idle ones. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "taskledger/redis/client.h"

namespace taskledger::internal {

class RedisPool {
 public:
  class Lease {
   public:
    Lease(RedisPool& pool, std::unique_ptr<RedisClient> client)
        : pool_(&pool), client_(std::move(client)) {}
    Lease(Lease&& other) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (client_) pool_->Return(std::move(client_));
    }
    RedisClient* operator->() { return client_.get(); }
    RedisClient& operator*() { return *client_; }

   private:
    RedisPool* pool_;
    std::unique_ptr<RedisClient> client_;
  };

  RedisPool(RedisEndpoint endpoint, RedisClientOptions options, size_t max_idle = 8)
      : endpoint_(std::move(endpoint)), options_(options), max_idle_(max_idle) {}

  Lease Take() {
    std::unique_ptr<RedisClient> client;
    {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        client = std::move(idle_.back());
        idle_.pop_back();
      }
    }
    if (!client) client = std::make_unique<RedisClient>(endpoint_, options_);
    return Lease(*this, std::move(client));
  }

  // Closes the idle connections (the server is gone: a new one will be
  // found at the same address, or none). Leased clients are not affected.
  void Clear() {
    std::vector<std::unique_ptr<RedisClient>> closing;
    std::lock_guard lock(mu_);
    closing.swap(idle_);
  }

 private:
  void Return(std::unique_ptr<RedisClient> client) {
    std::lock_guard lock(mu_);
    if (idle_.size() < max_idle_) idle_.push_back(std::move(client));
  }

  const RedisEndpoint endpoint_;
  const RedisClientOptions options_;
  const size_t max_idle_;
  std::mutex mu_;
  std::vector<std::unique_ptr<RedisClient>> idle_;
};

}  // namespace taskledger::internal
