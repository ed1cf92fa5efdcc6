// RedisStore: the durable Store on Redis (7.0+, through hiredis).
//
// A conversation is one Redis stream whose entry ids are its versions. A turn
// commit is one round trip: one call of the Redis Function tl_commit, which
// atomically appends the turn (and every K turns a snapshot) as entry
// 0-<version> only if the head is the version the writer built on; a writer
// who built on another version loses with a Conflict, nothing written. The key
// carries the hash tag {tenant:conversation} (both parts percent-encoded), so
// it works on Redis Cluster: each key goes to the primary of its slot,
// following MOVED/ASK while slots move (docs/redis-keys.md, "Running on Redis
// Cluster"). Key layout: docs/redis-keys.md.
//
// Thread-safe: each thread gets its own connection from a small pool. A broken
// connection is re-established on the next call; a call whose connection
// broke returns Unavailable or Timeout and was not retried unless retrying is
// provably safe. Committing the very same TurnRecord again after Unavailable
// or Timeout is safe: if the first attempt had landed, the function finds
// those bytes at that version and reports success without writing twice
// (docs/redis-keys.md, "Commit protocol").
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "taskledger/base/clock.h"
#include "taskledger/ledger/store.h"

namespace taskledger {

struct RedisOptions {
  // redis://[user:password@]host:port[/db], unix:///path/to/socket[?db=N], or
  // redis+cluster://[user:password@]host:port[,host:port...] for a Redis
  // Cluster (a redis:// URL naming a cluster node is detected as well).
  // redis:// and redis+cluster:// URLs may end in
  // ?replicas=N[&replica_timeout_ms=T], which set the two fields below.
  std::string url = "redis://127.0.0.1:6379";
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds command_timeout{1000};
  // Cluster only: how long a call keeps following redirects and waiting out
  // CLUSTERDOWN / TRYAGAIN / an unreachable primary (a failover) before it
  // returns Unavailable. A call whose request reached a server is never
  // re-sent after its connection broke (see the store's retry rules).
  std::chrono::milliseconds cluster_timeout{5000};
  // Durability across a primary's death: when > 0, a commit (a turn, or a
  // command-ledger change) is acknowledged only after `WAIT replicas
  // replica_timeout` says that many replicas hold it (one more round trip on
  // the same connection). Fewer within the timeout: Unavailable, though the
  // write is on the primary; sending the same commit again is safe. Keep
  // replica_timeout below command_timeout. 0: Redis' asynchronous
  // replication, where a failover can drop acknowledged writes
  // (docs/redis-keys.md, "Running on Redis Cluster").
  uint32_t replicas = 0;
  std::chrono::milliseconds replica_timeout{500};
  StoreOptions store;
};

// Parses and validates the URL, connects, and loads the taskledger_ledger
// function library unless the server holds this very version (a user whose
// ACL forbids FUNCTION LOAD needs an operator to have opened a store once). Unavailable / Timeout /
// InvalidArgument.
Result<std::unique_ptr<Store>> OpenRedisStore(const RedisOptions& options,
                                              const Clock& clock = SystemClock());

// Opens "memory" (or "") as a MemoryStore and redis://, unix:// and
// redis+cluster:// URLs as a RedisStore.
Result<std::unique_ptr<Store>> OpenStore(const std::string& url, StoreOptions options = {});

namespace internal {
class RedisRouter;
struct FunctionLibrary;

// What every Redis-backed store does at open, in one place (the ledger store
// and the command store, commands/): takes the durability query
// (`?replicas=N&replica_timeout_ms=T`) out of `options.url` into `options`,
// opens the router on the URL (a single server or a cluster), and loads
// `library` unless the server holds this very version. For taskledger's own
// stores; not a stable API. Errors as OpenRedisStore.
Result<std::unique_ptr<RedisRouter>> OpenRedisRouter(RedisOptions& options,
                                                     const FunctionLibrary& library);
// The Lua of tl_commit's two halves, the local functions
// commit_check(keys, args) and commit_write(keys, args) (see
// ledger_redis_function.cc), for a library that commits turns inside its own
// functions (the command ledger's tlc_commit_reserve_lease2, which passes
// commit_write the commit's incarnation as its third argument): one source.
std::string_view LedgerCommitLua();
}  // namespace internal

}  // namespace taskledger
