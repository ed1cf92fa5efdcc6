// Forwarding header kept for one release (0.2): `taskledger/ledger/command_transition.h` moved to
// `taskledger/commands/command_transition.h`. Include the new path; this file goes away in 0.3.
// docs/migration-0.2.md lists every moved header.
#pragma once

#include "taskledger/commands/command_transition.h"
