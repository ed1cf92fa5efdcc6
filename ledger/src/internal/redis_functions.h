// The `taskledger` Redis Functions library: the server-side code behind the
// ledger's atomic commit and one-round-trip reads. Functions it registers:
//
//   tl_commit  KEYS head turns snaps snapidx
//              ARGV base next turn_payload snapshot_payload('' = none)
//                   retention_ms('0' = none)
//     -> 1 committed; 0 already committed (a retry of the same turn);
//        error "CONFLICT <head>" when head != base (nothing written).
//   tl_advance KEYS head turns snaps snapidx   ARGV base next retention_ms
//     -> 1 head moved to next (the caller's HSETNX, queued right after it
//        in the same MULTI, writes the turn); error "CONFLICT <head>".
//        REQUIRES base >= 1. Used for turns without a snapshot.
//   tl_read    KEYS head turns snaps snapidx   ARGV version ('' = head)
//     (no-writes) -> {head} if version > head, else
//        {head, version, snap_version, snap_payload or '', turn payloads
//         snap_version+1 .. version}
//
// Other components load their own libraries under other names (FUNCTION LOAD
// REPLACE replaces a whole library). Thread-safe (constant data).
#pragma once

#include "internal/redis_client.h"

namespace taskledger::internal {

const FunctionLibrary& LedgerFunctionLibrary();

}  // namespace taskledger::internal
