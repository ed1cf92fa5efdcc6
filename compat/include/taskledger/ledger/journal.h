// Forwarding header kept for one release (0.2): `taskledger/ledger/journal.h` moved to
// `taskledger/commands/journal.h`. Include the new path; this file goes away in 0.3.
// docs/migration-0.2.md lists every moved header.
#pragma once

#include "taskledger/commands/journal.h"
