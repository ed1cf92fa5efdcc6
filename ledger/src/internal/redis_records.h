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

#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "taskledger/ledger/state.h"

namespace taskledger::internal {

// == nlohmann::json::to_cbor(EncodeTurn(turn)), appended to `out`.
void AppendTurnRecordBytes(const TurnRecord& turn, std::string& out);
class CallBytesCache;
// == nlohmann::json::to_cbor(EncodeState(state)), appended to `out`. With
// `calls` (may be null), the calls array comes from that cache, which
// encodes only the calls recorded since its last use (same bytes).
void AppendStateRecordBytes(const LedgerState& state, std::string& out,
                            CallBytesCache* calls = nullptr);

// The state / turn a record's bytes hold, read straight into the structs
// (redis_records_read.cc), when the bytes have the layout the writers above
// emit (members in any order). nullopt when they do not (a member twice or
// null, another encoding, damage): decode those with DecodeState /
// DecodeTurn of nlohmann::json::from_cbor, which then decides what they hold
// or how they are wrong. Whenever these read a record, the codec reads the
// same value from it. O(size).
std::optional<LedgerState> ReadStateRecord(std::string_view bytes);
std::optional<TurnRecord> ReadTurnRecord(std::string_view bytes);

// One call record's CBOR bytes (an element of the calls arrays), appended.
void AppendCallBytes(const CallRecord& call, std::string& out);
// The CBOR head of an array of `n` items, appended.
void AppendArrayHead(size_t n, std::string& out);

// The encoded calls of the last CallList a snapshot wrote. A conversation's
// calls only grow (CallList is persistent: a list holding the remembered
// newest record holds every record before it, unchanged), so the next
// snapshot of the same conversation encodes only the calls after it and
// copies the rest. Any other list is encoded in full and remembered instead.
// Thread-safe (one mutex).
class CallBytesCache {
 public:
  // == the CBOR array of `calls`, appended to `out`.
  void Append(const CallList& calls, std::string& out);

 private:
  std::mutex mu_;
  CallList list_;      // holds its records alive: their addresses identify them
  std::string bytes_;  // the encoded records of list_, without the array head
};

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
