// AuditHistory: one conversation's committed turns read back from a store,
// with the state after every turn rebuilt by ApplyTurn (the same pure function
// the store uses), so `audit` and the HTML page can show each turn's diff and
// any version's state without a store round trip per version; and the
// evidence chain of a decision: rule -> the entries it read (with the value
// they had in the state the decision saw) -> the tool calls and output paths
// those entries came from.
// Plain data; single-threaded like the CLI.
#pragma once

#include <string>
#include <vector>

#include "taskledger/base/status.h"
#include "taskledger/ledger/state.h"
#include "taskledger/ledger/store.h"
#include "taskledger/pack/rule_pack.h"

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

// The state decision `d` saw: version d.version_seen plus the first
// d.staged_seen updates of the turn it was taken in (as far as the history
// holds them).
LedgerState SeenState(const AuditHistory& h, const DecisionRecord& d);

// The calls recorded for `call_id`, in order, as {"turn", "tool", "arguments",
// "writes", "outcome"}; and the decisions taken for it, with "committed_in".
nlohmann::json CallsOf(const AuditHistory& h, const std::string& call_id);

// The evidence of decision `d`: one item per evaluated rule, in evaluation
// order: {"rule", "outcome", "reason", "deciding" (the rule that held the call
// back; an allow has none: every applicable rule passed), "reads": [EncodeDecision's
// read + "value" (in the seen state; absent when the entry was), "value_matches"
// (its digest is the recorded one), "call" (the recorded call the source id
// names: {"turn", "tool", "id", "arguments", "outcome"}), "extraction" (the
// extraction rule of `pack`, when given and known: {"rule", "tool", "path"} or
// {"rule", "pattern"})]}.
nlohmann::json DecisionEvidence(const AuditHistory& h, const DecisionRecord& d,
                                const RulePack* pack);

// Readable names of call outcomes: "uncertain" -> "uncertain (the effect may
// have happened: reconcile it)", ... ; unknown ones as they are.
std::string OutcomeMeaning(const std::string& outcome);

// "added"/"changed"/"removed" entries of a diff as JSON:
// [{"change", "category", "key", "before", "after", "source", "verified"}].
nlohmann::json EncodeAuditDiff(const StateDiff& diff);

}  // namespace taskledger::cli
