// The text summary `taskledger replay` prints at the end (without --json):
// counts, the labeled decisions, failures and policy errors, and one line per
// rule with what it did across the replay (ReplayTally's "rules").
#pragma once

#include <string>

#include "taskledger/session/replay_tally.h"

namespace taskledger::cli {

// Writes the summary of `tally` to stdout; `seconds` is the replay's wall
// time (for events/s); `prefix` is printed as "stored under:" when not empty.
void PrintReplaySummary(const ReplayTally& tally, double seconds, const std::string& prefix);

}  // namespace taskledger::cli
