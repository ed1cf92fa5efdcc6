// Forwarding header kept for one release (0.2): `taskledger/policy/proposed_call.h` moved to
// `taskledger/base/tool_call.h`. Include the new path; this file goes away in 0.3.
// docs/migration-0.2.md lists every moved header.
#pragma once

#include "taskledger/base/tool_call.h"
