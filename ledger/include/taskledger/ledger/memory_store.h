// MemoryStore: the embedded default Store, no server needed. Keeps turn
// records and periodic snapshots in process memory; honours retention against
// an injectable Clock. Thread-safe (one mutex; commits are short): sessions
// of different conversations may commit from several threads at once.
#pragma once

#include <memory>

#include "taskledger/base/clock.h"
#include "taskledger/ledger/store.h"

namespace taskledger {

std::unique_ptr<Store> NewMemoryStore(StoreOptions options = {},
                                      const Clock& clock = SystemClock());

// A MemoryStore that keeps only each conversation's head: its version, its
// state and nothing of the turns that led there, for a run whose history
// nobody reads (`taskledger replay` without audit output: the process exits
// after printing the tally). Commits, Head and ReadHead behave as in
// NewMemoryStore; ReadVersion of an older version than the head (other than
// 0) and ReadTurns of any turn are FailedPrecondition, never an empty or
// wrong answer. So it does NOT pass the store contract's history half, and a
// Session reopened on a conversation it holds fails to open (it reads the
// turns for its provenance index). Memory: one state per conversation
// instead of every version and turn record.
std::unique_ptr<Store> NewHeadsOnlyMemoryStore(StoreOptions options = {},
                                               const Clock& clock = SystemClock());

}  // namespace taskledger
