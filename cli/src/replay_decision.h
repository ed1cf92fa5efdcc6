// The line `taskledger replay` prints for each gated call: its conversation,
// call id, tool, decision, deciding rule, the version it was taken on, the
// reason, and how it compares with the trace's label. With --json it is one
// JSON object per line (keys sorted, as nlohmann's dump writes them).
#pragma once

#include <ostream>
#include <string>

#include "taskledger/session/replay.h"

namespace taskledger::cli {

// Writes the decision line of `c` (nothing for a read-only call, or when
// `quiet`); `json` selects the JSON form.
void PrintReplayDecision(std::ostream& out, bool quiet, bool json, const std::string& conversation,
                         const ReplayedCall& c);

}  // namespace taskledger::cli
