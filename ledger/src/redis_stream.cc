// Reading the ledger's turn stream back (see internal/redis_stream.h).
// Thread-safe (pure functions).
#include "internal/redis_stream.h"

#include <charconv>

#include "internal/redis_records.h"
#include "taskledger/ledger/codec.h"

namespace taskledger::internal {
namespace {

// The general decoding, for records the direct readers decline. A tag is kept
// as a binary value's subtype, as the writer writes one (CborValue reads it
// the same way).
Result<nlohmann::json> Deserialize(const std::string& bytes, std::string_view what) {
  auto j = nlohmann::json::from_cbor(bytes, /*strict=*/true, /*allow_exceptions=*/false,
                                     nlohmann::json::cbor_tag_handler_t::store);
  if (j.is_discarded()) return Status::Corruption(std::string(what) + ": undecodable record");
  return j;
}

// A record read directly when it has the writer's layout, else through the
// codec (see ReadStateRecord in internal/redis_records.h).
template <class T, class Read, class DecodeJson>
Result<T> Decode(const std::string& bytes, const std::string& name, Read read, DecodeJson decode) {
  if (std::optional<T> direct = read(bytes)) return std::move(*direct);
  auto j = Deserialize(bytes, name);
  if (!j) return j.error();
  Result<T> decoded = decode(*j);
  if (!decoded) return Status::Corruption(name + ": " + decoded.error().message());
  return decoded;
}

std::string Named(std::string_view what, std::string_view record, uint64_t version) {
  return std::string(record) + " " + std::to_string(version) + " of " + std::string(what);
}

}  // namespace

std::string EntryId(uint64_t version) { return "0-" + std::to_string(version); }

std::optional<uint64_t> VersionOfEntryId(std::string_view id) {
  if (!id.starts_with("0-") || id.size() == 2) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(id.data() + 2, id.data() + id.size(), v);
  if (ec != std::errc() || end != id.data() + id.size() || v == 0) return std::nullopt;
  return v;
}

Status AppendEntries(const Reply& reply, std::string_view what, std::vector<StreamEntry>& out) {
  if (reply.is_error()) return ServerErrorToStatus(reply, what);
  if (!reply.is_array() && !reply.is_nil()) {
    return Status::Internal(std::string(what) + ": unexpected reply " + reply.Describe());
  }
  for (const Reply& item : reply.elements()) {
    const auto& parts = item.elements();
    if (parts.size() != 2)
      return Status::Corruption(std::string(what) + ": malformed stream entry");
    auto version = VersionOfEntryId(parts[0].str());
    if (!version)
      return Status::Corruption(std::string(what) + ": entry id '" + parts[0].str() +
                                "' is not 0-<version>");
    StreamEntry entry;
    entry.version = *version;
    const auto& fields = parts[1].elements();
    for (size_t i = 0; i + 1 < fields.size(); i += 2) {
      if (fields[i].str() == "t") entry.turn = &fields[i + 1].str();
      if (fields[i].str() == "s") entry.state = &fields[i + 1].str();
      if (fields[i].str() == "i") entry.incarnation = &fields[i + 1].str();
    }
    if (entry.turn == nullptr)
      return Status::Corruption(Named(what, "turn", *version) + ": no turn record");
    out.push_back(entry);
  }
  return Status::Ok();
}

Status CheckContiguous(std::span<const StreamEntry> entries, bool descending,
                       std::string_view what) {
  for (size_t i = 1; i < entries.size(); ++i) {
    uint64_t a = entries[i - 1].version, b = entries[i].version;
    uint64_t expected = descending ? a - 1 : a + 1;
    if (b == expected) continue;
    uint64_t low = std::min(a, b) + 1, high = std::max(a, b) - 1;
    return Status::Corruption(std::string(what) + ": versions " + std::to_string(low) + ".." +
                              std::to_string(high) + " are missing (a gap between " +
                              std::to_string(std::min(a, b)) + " and " +
                              std::to_string(std::max(a, b)) + ")");
  }
  return Status::Ok();
}

Result<TurnRecord> DecodeTurnEntry(const StreamEntry& entry, std::string_view what) {
  std::string name = Named(what, "turn", entry.version);
  auto turn = Decode<TurnRecord>(*entry.turn, name, ReadTurnRecord, DecodeTurn);
  if (!turn) return turn.error();
  if (turn->turn != entry.version) {
    return Status::Corruption(name + ": records turn " + std::to_string(turn->turn));
  }
  return turn;
}

Result<LedgerState> DecodeSnapshotEntry(const StreamEntry& entry, std::string_view what) {
  std::string name = Named(what, "snapshot", entry.version);
  auto state = Decode<LedgerState>(*entry.state, name, ReadStateRecord, DecodeState);
  if (!state) return state.error();
  if (state->version != entry.version) {
    return Status::Corruption(name + ": records version " + std::to_string(state->version));
  }
  return state;
}

Result<LedgerState> Replay(std::span<const StreamEntry> newest_first, std::string_view what,
                           std::shared_ptr<const TurnRecord>* head_turn) {
  LedgerState state;
  if (newest_first.empty()) return state;
  size_t base = newest_first.size() - 1;  // the oldest entry: a snapshot or version 1
  size_t next;                            // the oldest entry still to replay
  if (newest_first[base].state != nullptr) {
    auto snapshot = DecodeSnapshotEntry(newest_first[base], what);
    if (!snapshot) return snapshot.error();
    state = std::move(snapshot.value());
    next = base;  // replay from the entry above the snapshot
  } else {
    if (newest_first[base].version != 1) {
      return Status::Corruption(std::string(what) + ": no snapshot at or below version " +
                                std::to_string(newest_first[base].version) + " and no version 1");
    }
    next = base + 1;  // replay version 1 too
  }
  if (head_turn != nullptr && next == 0) {
    // The newest entry is the snapshot: its turn is read, not replayed.
    auto turn = DecodeTurnEntry(newest_first[0], what);
    if (!turn) return turn.error();
    *head_turn = std::make_shared<const TurnRecord>(std::move(turn.value()));
  }
  while (next-- > 0) {
    auto turn = DecodeTurnEntry(newest_first[next], what);
    if (!turn) return turn.error();
    if (Status s = ApplyTurn(state, *turn); !s.ok()) {
      return Status::Corruption(std::string(what) + ": replaying turn " +
                                std::to_string(turn->turn) + ": " + s.message());
    }
    if (head_turn != nullptr && next == 0) {
      *head_turn = std::make_shared<const TurnRecord>(std::move(turn.value()));
    }
  }
  return state;
}

}  // namespace taskledger::internal
