// MemoryStore: the embedded default Store, no server needed. Keeps turn
// records and periodic snapshots in process memory; honours retention against
// an injectable Clock. Thread-safe (one mutex; commits are short).
#pragma once

#include <memory>

#include "taskledger/base/clock.h"
#include "taskledger/ledger/store.h"

namespace taskledger {

std::unique_ptr<Store> NewMemoryStore(StoreOptions options = {},
                                      const Clock& clock = SystemClock());

}  // namespace taskledger
