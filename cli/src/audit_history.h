// AuditHistory: one conversation's committed turns read back from a store,
// with the state after every turn rebuilt by ApplyTurn (the same pure function
// the store uses), so `audit` and the HTML page can show each turn's diff and
// any version's state without a store round trip per version.
// Plain data; single-threaded like the CLI.
#pragma once

#include <string>
#include <vector>

#include "taskledger/base/status.h"
#include "taskledger/ledger/state.h"
#include "taskledger/ledger/store.h"

namespace taskledger::cli {

struct AuditTurn {
  TurnRecord record;
  StateDiff diff;  // from the previous version to this one
};

struct AuditHistory {
  ConversationId id;
  std::vector<AuditTurn> turns;     // turns[i] produced version i + 1
  std::vector<LedgerState> states;  // states[v] is version v (states[0] is empty)
};

// Reads every turn of `id`. NotFound for a conversation with no turns.
Result<AuditHistory> LoadAuditHistory(Store& store, const ConversationId& id);

// "added"/"changed"/"removed" entries of a diff as JSON:
// [{"change", "category", "key", "before", "after", "source", "verified"}].
nlohmann::json EncodeAuditDiff(const StateDiff& diff);

}  // namespace taskledger::cli
