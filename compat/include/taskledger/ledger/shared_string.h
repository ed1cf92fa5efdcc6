// Forwarding header kept for one release (0.2): `taskledger/ledger/shared_string.h` moved to
// `taskledger/base/shared_string.h`. Include the new path; this file goes away in 0.3.
// docs/migration-0.2.md lists every moved header.
#pragma once

#include "taskledger/base/shared_string.h"
