// RedisCommandStore: the durable CommandStore on Redis 7 (through hiredis).
//
// Every transition is one FCALL of its own function in the Redis Functions
// library "taskledger_commands", which checks every precondition before its
// first write, so a transition is atomic and a refused one writes nothing.
// Every key of a run shares the hash tag {tenant:run} (both percent-encoded),
// so the functions also run unchanged on Redis Cluster. Key layout:
// docs/commands.md.
//
// Times come from the caller (TransitionRequest::now_ms), never from the
// server clock, so leases are judged by the same Clock everywhere.
// Thread-safe: a small pool of connections, one in use per call. A call whose
// connection broke returns Unavailable or Timeout and is not retried here.
#pragma once

#include <memory>

#include "taskledger/commands/command_store.h"
#include "taskledger/ledger/redis_store.h"

namespace taskledger {

// Parses options.url, connects and loads the function library if needed.
// Unavailable / Timeout / InvalidArgument.
Result<std::unique_ptr<CommandStore>> OpenRedisCommandStore(const RedisOptions& options);

}  // namespace taskledger
