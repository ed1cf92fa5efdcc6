// JSON encoding of the ledger's records, shared by the Redis store, the CLI and
// the trace and audit formats. Decoding validates shape and types and reports
// Corruption with the offending field instead of throwing. Thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"
#include "taskledger/ledger/decision_record.h"
#include "taskledger/ledger/state.h"

namespace taskledger {

nlohmann::json EncodeEntry(const Entry& e);
Result<Entry> DecodeEntry(const nlohmann::json& j);
nlohmann::json EncodeUpdate(const Update& u);
Result<Update> DecodeUpdate(const nlohmann::json& j);
nlohmann::json EncodeCall(const CallRecord& c);
Result<CallRecord> DecodeCall(const nlohmann::json& j);
// A decision record (decision_record.h): members of unknown names are kept in
// `extra`; a non-object or a known member of the wrong type is Corruption.
nlohmann::json EncodeDecision(const DecisionRecord& d);
Result<DecisionRecord> DecodeDecision(const nlohmann::json& j);
// A provenance source: {"kind": "user", "text", "turn"} or {"kind": "tool",
// "tool", "id", "output", "turn"}; a refused one has "refused" (the error)
// instead of its text or output.
nlohmann::json EncodeSource(const SourceRecord& s);
Result<SourceRecord> DecodeSource(const nlohmann::json& j);
// "sources" is written only when the turn has some, so a turn without any
// keeps the bytes it had before sources existed.
nlohmann::json EncodeTurn(const TurnRecord& t);
Result<TurnRecord> DecodeTurn(const nlohmann::json& j);
nlohmann::json EncodeState(const LedgerState& s);
Result<LedgerState> DecodeState(const nlohmann::json& j);
nlohmann::json EncodeDiff(const StateDiff& d);

}  // namespace taskledger
