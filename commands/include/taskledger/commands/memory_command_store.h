// MemoryCommandStore: the embedded CommandStore, no server needed. Keeps
// commands, run records and journals in process memory and applies every
// transition with ApplyTransition under one mutex, so it is atomic by
// construction. State dies with the process: use the Redis store for crash
// safety across processes. Thread-safe.
#pragma once

#include <memory>

#include "taskledger/commands/command_store.h"

namespace taskledger {

std::unique_ptr<CommandStore> NewMemoryCommandStore();

}  // namespace taskledger
