// The ledger's turn stream as the Redis store reads it back: entry ids
// ("0-<version>"), XRANGE / XREVRANGE replies parsed into entries, the checks
// that the versions are contiguous, and the records decoded (CBOR of the
// codec's documents, docs/redis-keys.md). Pure functions over Reply values;
// thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "taskledger/ledger/state.h"
#include "taskledger/redis/client.h"

namespace taskledger::internal {

// One entry of a turn stream. The pointers are into the Reply it was parsed
// from, which must outlive the entry.
struct StreamEntry {
  uint64_t version = 0;
  const std::string* turn = nullptr;   // field `t`: the encoded TurnRecord
  const std::string* state = nullptr;  // field `s`: the full state; snapshot turns only
  // Field `i`: the conversation's incarnation; version 1 only (and not in
  // streams written before incarnations).
  const std::string* incarnation = nullptr;
};

// "0-<version>": the id of version `version`'s entry.
std::string EntryId(uint64_t version);
// The version of an entry id "0-<version>" (version >= 1); nullopt otherwise.
std::optional<uint64_t> VersionOfEntryId(std::string_view id);

// Appends the entries of an XRANGE / XREVRANGE reply to `out`, in reply
// order. Corruption (naming `what`) for an id that is not 0-<version> or an
// entry without field `t`; the server's error for an error reply.
Status AppendEntries(const Reply& reply, std::string_view what, std::vector<StreamEntry>& out);

// OK if each entry's version is one below (descending) or above (ascending)
// the previous one's; else Corruption naming the missing versions.
Status CheckContiguous(std::span<const StreamEntry> entries, bool descending,
                       std::string_view what);

// The decoded records of an entry. Corruption if they do not decode or do not
// carry the entry's version.
Result<TurnRecord> DecodeTurnEntry(const StreamEntry& entry, std::string_view what);
// REQUIRES: entry.state != nullptr.
Result<LedgerState> DecodeSnapshotEntry(const StreamEntry& entry, std::string_view what);

// The state at the newest of `newest_first`, a contiguous run of entries in
// descending order that ends at a snapshot entry or at version 1: the
// snapshot (or the empty state) with the newer turns replayed on it. With
// `head_turn`, also the newest entry's turn record.
Result<LedgerState> Replay(std::span<const StreamEntry> newest_first, std::string_view what,
                           std::shared_ptr<const TurnRecord>* head_turn = nullptr);

}  // namespace taskledger::internal
