// A decision record (decision_record.h) as the CBOR bytes a turn keeps it in:
// the element of a stored turn's "decisions" array (docs/redis-keys.md), i.e.
// nlohmann::json::to_cbor(EncodeDecision(d)), written straight from the
// struct. The command ledger keeps a command's decision in these very bytes
// (the command hash's "decision" field, docs/commands.md): one encoding of a
// decision, which a write sends once, inside the turn it commits.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "taskledger/base/status.h"
#include "taskledger/ledger/decision_record.h"

namespace taskledger {

// == nlohmann::json::to_cbor(EncodeDecision(d)), appended to `out`. O(size
// of the record); no JSON tree unless the record has members this version
// does not know (DecisionRecord::extra).
void AppendDecisionBytes(const DecisionRecord& d, std::string& out);

// The record those bytes hold: DecodeDecision of the one CBOR data item they
// are. Corruption for bytes that are not exactly one data item, or not a
// decision record (as DecodeDecision words it). O(size).
Result<DecisionRecord> DecodeDecisionBytes(std::string_view bytes);

}  // namespace taskledger
