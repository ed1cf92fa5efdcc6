// RedisStore: the durable Store on Redis (7.0+, through hiredis).
//
// A conversation is one Redis stream whose entry ids are its versions. A turn
// commit is one round trip: a MULTI / XLEN / XADD / EXEC transaction that
// appends the turn (and every K turns a snapshot) as entry 0-<version>, and
// that a writer who built on another version loses with a Conflict. The key
// carries the hash tag {tenant:conversation} (both parts percent-encoded), so
// it works unchanged on Redis Cluster. Key layout: docs/redis-keys.md.
//
// Thread-safe: each thread gets its own connection from a small pool. A broken
// connection is re-established on the next call; a call whose connection
// broke returns Unavailable or Timeout and was not retried unless retrying is
// provably safe (the commit carries its base version, so a retried commit that
// already landed reports Conflict rather than writing twice... see
// docs/redis-keys.md for how the store disambiguates that case).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "taskledger/ledger/clock.h"
#include "taskledger/ledger/store.h"

namespace taskledger {

struct RedisOptions {
  // redis://[user:password@]host:port[/db] or unix:///path/to/socket[?db=N]
  std::string url = "redis://127.0.0.1:6379";
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds command_timeout{1000};
  StoreOptions store;
};

// Parses and validates the URL, connects, and loads the taskledger function
// library if the server lacks it. Unavailable / Timeout / InvalidArgument.
Result<std::unique_ptr<Store>> OpenRedisStore(const RedisOptions& options,
                                              const Clock& clock = SystemClock());

// Opens "memory" (or "") as a MemoryStore and redis:// or unix:// URLs as a RedisStore.
Result<std::unique_ptr<Store>> OpenStore(const std::string& url, StoreOptions options = {});

}  // namespace taskledger
