// The Redis Functions library "taskledger_ledger": tl_commit, the one
// server-side step of a turn commit (docs/redis-keys.md, "Commit protocol").
//
// Calling convention:
//   FCALL tl_commit 1 <turn stream key> <base version> <retention ms or "">
//         <turn record> [<snapshot record>]
// It appends entry 0-<base+1> (field t = the turn, s = the snapshot) only if
// the stream holds exactly <base> entries, then sets or clears the key's
// expiry; the check and the writes are one atomic step. It answers the new
// version, also when that very turn (byte for byte) had already landed, so a
// retried commit never lands twice. Refusals are error replies whose first
// word is TLCONFLICT <head>, TLGONE (base > 0 but the conversation does not
// exist: dropped or expired) or TLCORRUPT <detail> (entries and length
// disagree); CommitErrorToStatus maps them.
// Thread-safe (constant data).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "taskledger/redis/client.h"

namespace taskledger::internal {

const FunctionLibrary& LedgerFunctionLibrary();

// The head named by a TLCONFLICT reply, if `reply` is one.
std::optional<uint64_t> ConflictHead(const Reply& reply);

// TLGONE -> Conflict ("does not exist"), TLCORRUPT -> Corruption, anything
// else -> ServerErrorToStatus. `context` prefixes the message. TLCONFLICT is
// the caller's to word (it knows both versions).
// REQUIRES: reply.is_error().
Status CommitErrorToStatus(const Reply& reply, std::string_view context);

}  // namespace taskledger::internal
