// The stored bytes of the Redis store's records, written straight from the
// C++ structs: the hot path of every commit.
//
// The stored form of a turn is the CBOR serialisation of the codec's JSON
// document (docs/redis-keys.md), i.e. nlohmann::json::to_cbor(EncodeTurn(t)).
// Building that DOM first costs tens of microseconds per turn (one heap node
// per field); these writers emit the very same bytes directly, so the stored
// format, the byte-exact retry check of a commit and every reader stay as
// they were. tests/ledger/redis_records_test.cc holds them to that: byte
// equality with to_cbor(EncodeX(...)) over records using every optional field
// and every kind of JSON value. Pure functions; thread-safe.
#pragma once

#include <string>

#include "taskledger/ledger/state.h"

namespace taskledger::internal {

// == nlohmann::json::to_cbor(EncodeTurn(turn)), appended to `out`.
void AppendTurnRecordBytes(const TurnRecord& turn, std::string& out);
// == nlohmann::json::to_cbor(EncodeState(state)), appended to `out`.
void AppendStateRecordBytes(const LedgerState& state, std::string& out);

inline std::string TurnRecordBytes(const TurnRecord& turn) {
  std::string out;
  AppendTurnRecordBytes(turn, out);
  return out;
}
inline std::string StateRecordBytes(const LedgerState& state) {
  std::string out;
  AppendStateRecordBytes(state, out);
  return out;
}

}  // namespace taskledger::internal
