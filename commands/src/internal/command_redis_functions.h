// The Redis Functions library "taskledger_commands": one function per command
// transition (tlc_<transition name>), plus reserve, run status and journal
// put. Each checks every precondition before its first write, mirroring
// ApplyTransition (command_transition.cc) check for check.
//
// Calling convention of the transition functions:
//   KEYS = {command hash, run meta hash}
//   ARGV = {now_ms, fencing_token, owner, lease_ms, external_id, evidence_json,
//           error, actor, reason, max_attempts, replay_max_attempts_per_command,
//           replay_max_per_run, replay_max_per_window, replay_window_ms,
//           ['delta']}
// and they return the command hash (HGETALL) after the write; a fenced
// transition (renew, succeed, fail, mark_uncertain, unlease) given 'delta'
// returns only the field/value pairs it wrote, in write order, for a caller
// that holds the hash as the lease left it (LeasedHashes). tlc_reserve_lease(2)
// and tlc_commit_reserve_lease(2) write a new command and its lease as one HSET
// and answer its hash without reading it back. Refusals are
// error replies whose first word maps to a StatusCode (CommandErrorToStatus).
// Thread-safe (constant data).
#pragma once

#include <string_view>

#include "taskledger/redis/client.h"

namespace taskledger::internal {

const FunctionLibrary& CommandFunctionLibrary();

// The Lua source of the reserve functions (command_redis_reserve_lua.cc),
// part of CommandFunctionLibrary's; it uses the transition functions' local
// helpers (fail, hset, n2s, ...), so it is only valid inside that library.
std::string_view CommandReserveLua();

// TLPRE -> FailedPrecondition, TLFENCED -> Conflict, TLARG -> InvalidArgument,
// TLLIMIT -> LimitExceeded, TLNOTFOUND -> NotFound; else ServerErrorToStatus.
// REQUIRES: reply.is_error().
Status CommandErrorToStatus(const Reply& reply, std::string_view context);

}  // namespace taskledger::internal
