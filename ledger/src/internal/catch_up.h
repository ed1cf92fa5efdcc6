// Catching a held state up to the head by applying only the turns after it
// (Store::ReadHeadAfter): how far behind that is worth it, and whether the
// stored turn at the held version really is the one the held state ends with
// (a conversation dropped and written again since has another turn there).
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "taskledger/ledger/state.h"

namespace taskledger::internal {

// The most turns a caller holding `known` catches up on before reading the
// whole head is as cheap: a sixteenth of its records (a reader of the head
// replays up to that many turns after the newest snapshot anyway), at least 64.
size_t CatchUpLimit(const LedgerState& known);

// `known` with turns[1..] applied, when turns[0] is the turn that produced
// `known`: version known.version, committed at `known_committed_at_ms` (not
// 0), with the calls `known` ends with and, for each entry it set that
// `known` still holds from that turn, the same value. nullopt when that does
// not hold, or a turn does not apply (the caller then reads the whole head,
// which reports a real corruption).
std::optional<LedgerState> CatchUp(const LedgerState& known, int64_t known_committed_at_ms,
                                   std::span<const TurnRecord> turns);

}  // namespace taskledger::internal
