// Direct CBOR writers for the Redis store's turn and state records (see
// internal/redis_records.h). They mirror codec.cc's EncodeTurn / EncodeState
// field for field, and nlohmann's CBOR writer byte for byte: definite lengths,
// the shortest integer and length heads, object members in std::map key order
// (byte-wise), doubles as float32 when exact. Any change to the codec's field
// set must be made here too; redis_records_test.cc fails if the two differ.
// Pure functions; thread-safe.
#include "internal/redis_records.h"

#include "taskledger/ledger/codec.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>

namespace taskledger::internal {
namespace {

using nlohmann::json;

// A member name (shorter than 24 bytes) encoded at compile time as a CBOR
// text string: the head byte 0x60 + length, then the bytes.
template <size_t N>
struct Name {
  static_assert(N - 1 < 24, "member names need a one-byte head");
  char bytes[N];
  // Implicit by design: a string literal is a member name.
  // NOLINTNEXTLINE(google-explicit-constructor)
  consteval Name(const char (&name)[N]) : bytes{} {
    bytes[0] = static_cast<char>(0x60 + (N - 1));
    for (size_t i = 0; i + 1 < N; ++i) bytes[i + 1] = name[i];
  }
};

class CborWriter {
 public:
  explicit CborWriter(std::string& out) : out_(out) {}

  // The initial byte of a data item of `major` type with argument `n`, in
  // the shortest form (RFC 8949 section 3), as nlohmann writes it.
  void Head(uint8_t major, uint64_t n) {
    const auto m = static_cast<unsigned char>(major << 5);
    if (n <= 0x17) {
      out_.push_back(static_cast<char>(m | n));
      return;
    }
    char bytes[9];
    int width = n <= 0xff ? 1 : n <= 0xffff ? 2 : n <= 0xffffffffULL ? 4 : 8;
    bytes[0] = static_cast<char>(m | (width == 1   ? 0x18
                                      : width == 2 ? 0x19
                                      : width == 4 ? 0x1a
                                                   : 0x1b));
    for (int i = 0; i < width; ++i)
      bytes[1 + i] = static_cast<char>((n >> (8 * (width - 1 - i))) & 0xff);
    out_.append(bytes, static_cast<size_t>(1 + width));
  }

  // A member name known at compile time: its head and bytes in one append.
  template <Name kName>
  void Key() {
    out_.append(kName.bytes, sizeof(kName.bytes));
  }
  void Unsigned(uint64_t v) { Head(0, v); }
  void Signed(int64_t v) {
    if (v >= 0) {
      Head(0, static_cast<uint64_t>(v));
    } else {
      Head(1, static_cast<uint64_t>(-1 - v));
    }
  }
  void Bool(bool b) { out_.push_back(b ? '\xf5' : '\xf4'); }
  void Text(std::string_view s) {
    Head(3, s.size());
    out_.append(s.data(), s.size());
  }
  void Array(size_t n) { Head(4, n); }
  void Map(size_t n) { Head(5, n); }

  void Double(double d) {
    if (std::isnan(d)) {
      out_.append("\xf9\x7e\x00", 3);
    } else if (std::isinf(d)) {
      out_.append(d > 0 ? std::string_view("\xf9\x7c\x00", 3)
                        : std::string_view("\xf9\xfc\x00", 3));
    } else if (d >= static_cast<double>(std::numeric_limits<float>::lowest()) &&
               d <= static_cast<double>(std::numeric_limits<float>::max()) &&
               static_cast<double>(static_cast<float>(d)) == d) {
      out_.push_back('\xfa');
      BigEndian(std::bit_cast<uint32_t>(static_cast<float>(d)), 4);
    } else {
      out_.push_back('\xfb');
      BigEndian(std::bit_cast<uint64_t>(d), 8);
    }
  }

  void Json(const json& j) {
    switch (j.type()) {
      case json::value_t::null:
        out_.push_back('\xf6');
        return;
      case json::value_t::boolean:
        Bool(j.get<bool>());
        return;
      case json::value_t::number_integer:
        Signed(j.get<int64_t>());
        return;
      case json::value_t::number_unsigned:
        Unsigned(j.get<uint64_t>());
        return;
      case json::value_t::number_float:
        Double(j.get<double>());
        return;
      case json::value_t::string:
        Text(j.get_ref<const std::string&>());
        return;
      case json::value_t::array: {
        const auto& items = j.get_ref<const json::array_t&>();
        Array(items.size());
        for (const json& item : items) Json(item);
        return;
      }
      case json::value_t::object: {
        const auto& members = j.get_ref<const json::object_t&>();
        Map(members.size());
        for (const auto& [key, value] : members) {
          Text(key);
          Json(value);
        }
        return;
      }
      default:
        // Binary (and discarded) values never come out of JSON text; leave
        // their rarely used encodings to nlohmann itself.
        json::to_cbor(j, out_);
        return;
    }
  }

 private:
  void BigEndian(uint64_t v, int bytes) {
    for (int shift = (bytes - 1) * 8; shift >= 0; shift -= 8) {
      out_.push_back(static_cast<char>((v >> shift) & 0xff));
    }
  }

  std::string& out_;
};

// Members are written in the byte-wise order of their names, which is the
// order nlohmann's std::map-backed objects serialise in; each comment lists
// the full member set of the record in that order.

// Provenance members a record carries, beyond its own fields.
size_t ProvenanceMembers(const Provenance& p) {
  return 3 + !p.source_id.empty() + !p.rule_id.empty() + !p.pack_version.empty();
}

// pack, rule, source, source_id, turn (the caller writes "value" before "verified").
void ProvenanceUpToTurn(CborWriter& w, const Provenance& p) {
  if (!p.pack_version.empty()) {
    w.Key<"pack">();
    w.Text(p.pack_version);
  }
  if (!p.rule_id.empty()) {
    w.Key<"rule">();
    w.Text(p.rule_id);
  }
  w.Key<"source">();
  w.Text(SourceKindName(p.source));
  if (!p.source_id.empty()) {
    w.Key<"source_id">();
    w.Text(p.source_id);
  }
  w.Key<"turn">();
  w.Unsigned(p.turn);
}

// category, expire_after_turns, expire_at_ms, key, op, pack, rule, source,
// source_id, turn, value, verified.
void WriteUpdate(CborWriter& w, const Update& u) {
  const bool set = u.op == UpdateOp::kSet;
  w.Map(3 + set + ProvenanceMembers(u.provenance) + u.expire_after_turns.has_value() +
        u.expire_at_ms.has_value());
  w.Key<"category">();
  w.Text(CategoryName(u.category));
  if (u.expire_after_turns) {
    w.Key<"expire_after_turns">();
    w.Unsigned(*u.expire_after_turns);
  }
  if (u.expire_at_ms) {
    w.Key<"expire_at_ms">();
    w.Signed(*u.expire_at_ms);
  }
  w.Key<"key">();
  w.Text(u.key);
  w.Key<"op">();
  w.Text(UpdateOpName(u.op));
  ProvenanceUpToTurn(w, u.provenance);
  if (set) {
    w.Key<"value">();
    w.Json(u.value);
  }
  w.Key<"verified">();
  w.Bool(u.provenance.verified);
}

// expires_at_ms, expires_at_turn, pack, rule, source, source_id, turn, value, verified.
void WriteEntry(CborWriter& w, const Entry& e) {
  w.Map(1 + ProvenanceMembers(e.provenance) + e.expires_at_turn.has_value() +
        e.expires_at_ms.has_value());
  if (e.expires_at_ms) {
    w.Key<"expires_at_ms">();
    w.Signed(*e.expires_at_ms);
  }
  if (e.expires_at_turn) {
    w.Key<"expires_at_turn">();
    w.Unsigned(*e.expires_at_turn);
  }
  ProvenanceUpToTurn(w, e.provenance);
  w.Key<"value">();
  w.Json(e.value);
  w.Key<"verified">();
  w.Bool(e.provenance.verified);
}

// args, id, outcome, tool, turn, writes.
void WriteCall(CborWriter& w, const CallRecord& c) {
  w.Map(6);
  w.Key<"args">();
  w.Json(c.arguments);
  w.Key<"id">();
  w.Text(c.call_id);
  w.Key<"outcome">();
  w.Text(c.outcome);
  w.Key<"tool">();
  w.Text(c.tool);
  w.Key<"turn">();
  w.Unsigned(c.turn);
  w.Key<"writes">();
  w.Bool(c.writes);
}

template <typename Calls>  // std::vector<CallRecord> or CallList
void WriteCalls(CborWriter& w, const Calls& calls) {
  w.Array(calls.size());
  for (const CallRecord& c : calls) WriteCall(w, c);
}

void WriteJsonArray(CborWriter& w, const std::vector<json>& items) {
  w.Array(items.size());
  for (const json& item : items) w.Json(item);
}

// category, digest, key, present, rule, source, source_id, turn, verified
// (an absent entry has only category, key and present).
void WriteRead(CborWriter& w, const EntryRead& r) {
  if (!r.present) {
    w.Map(3);
    w.Key<"category">();
    w.Text(CategoryName(r.category));
    w.Key<"key">();
    w.Text(r.key);
    w.Key<"present">();
    w.Bool(false);
    return;
  }
  w.Map(7 + !r.source_id.empty() + !r.rule.empty());
  w.Key<"category">();
  w.Text(CategoryName(r.category));
  w.Key<"digest">();
  w.Text(r.digest);
  w.Key<"key">();
  w.Text(r.key);
  w.Key<"present">();
  w.Bool(true);
  if (!r.rule.empty()) {
    w.Key<"rule">();
    w.Text(r.rule);
  }
  w.Key<"source">();
  w.Text(SourceKindName(r.source));
  if (!r.source_id.empty()) {
    w.Key<"source_id">();
    w.Text(r.source_id);
  }
  w.Key<"turn">();
  w.Unsigned(r.turn);
  w.Key<"verified">();
  w.Bool(r.verified);
}

// error, id, log, outcome, reads, reason.
void WriteRule(CborWriter& w, const RuleResult& r) {
  w.Map(3 + r.error + !r.log.empty() + !r.reads.empty());
  if (r.error) {
    w.Key<"error">();
    w.Bool(true);
  }
  w.Key<"id">();
  w.Text(r.id);
  if (!r.log.empty()) {
    w.Key<"log">();
    w.Array(r.log.size());
    for (const std::string& line : r.log) w.Text(line);
  }
  w.Key<"outcome">();
  w.Text(r.outcome);
  if (!r.reads.empty()) {
    w.Key<"reads">();
    w.Array(r.reads.size());
    for (const EntryRead& x : r.reads) WriteRead(w, x);
  }
  w.Key<"reason">();
  w.Text(r.reason);
}

// args_hash, call_id, conversation, decision, latency_us, pack_version,
// read_only, reason, rule, rules, staged_seen, tool, turn, version_seen. A
// record with members this version does not know goes through the codec
// (those members interleave with these in name order).
void WriteDecision(CborWriter& w, const DecisionRecord& d) {
  if (d.extra.is_object() && !d.extra.empty()) {
    w.Json(EncodeDecision(d));
    return;
  }
  w.Map(14);
  w.Key<"args_hash">();
  w.Text(d.args_hash);
  w.Key<"call_id">();
  w.Text(d.call_id);
  w.Key<"conversation">();
  w.Text(d.conversation);
  w.Key<"decision">();
  w.Text(d.decision);
  w.Key<"latency_us">();
  w.Signed(d.latency_us);
  w.Key<"pack_version">();
  w.Text(d.pack_version);
  w.Key<"read_only">();
  w.Bool(d.read_only);
  w.Key<"reason">();
  w.Text(d.reason);
  w.Key<"rule">();
  w.Text(d.rule);
  w.Key<"rules">();
  w.Array(d.rules.size());
  for (const RuleResult& r : d.rules) WriteRule(w, r);
  w.Key<"staged_seen">();
  w.Unsigned(d.staged_seen);
  w.Key<"tool">();
  w.Text(d.tool);
  w.Key<"turn">();
  w.Unsigned(d.turn);
  w.Key<"version_seen">();
  w.Unsigned(d.version_seen);
}

}  // namespace

void AppendCallBytes(const CallRecord& call, std::string& out) {
  CborWriter w(out);
  WriteCall(w, call);
}

void AppendArrayHead(size_t n, std::string& out) { CborWriter(out).Array(n); }

// at, calls, decisions, errors, turn, updates.
void AppendTurnRecordBytes(const TurnRecord& t, std::string& out) {
  out.reserve(out.size() + 64 + 160 * t.updates.size());
  CborWriter w(out);
  w.Map(3 + !t.calls.empty() + !t.decisions.empty() + !t.errors.empty());
  w.Key<"at">();
  w.Signed(t.committed_at_ms);
  if (!t.calls.empty()) {
    w.Key<"calls">();
    WriteCalls(w, t.calls);
  }
  if (!t.decisions.empty()) {
    w.Key<"decisions">();
    w.Array(t.decisions.size());
    for (const DecisionRecord& d : t.decisions) WriteDecision(w, d);
  }
  if (!t.errors.empty()) {
    w.Key<"errors">();
    WriteJsonArray(w, t.errors);
  }
  w.Key<"turn">();
  w.Unsigned(t.turn);
  w.Key<"updates">();
  w.Array(t.updates.size());
  for (const Update& u : t.updates) WriteUpdate(w, u);
}

// calls, conditions, constraints, facts, identifiers, version: the category
// maps are "<CategoryName>s", whose byte order is that fixed sequence.
void AppendStateRecordBytes(const LedgerState& s, std::string& out, CallBytesCache* calls) {
  out.reserve(out.size() + 64 + 160 * s.size() + 128 * s.calls.size());
  CborWriter w(out);
  w.Map(2 + kCategoryCount);
  w.Key<"calls">();
  if (calls != nullptr) {
    calls->Append(s.calls, out);
  } else {
    WriteCalls(w, s.calls);
  }
  for (Category c :
       {Category::kCondition, Category::kConstraint, Category::kFact, Category::kIdentifier}) {
    std::string name(CategoryName(c));
    name += 's';
    w.Text(name);
    const auto& entries = s.of(c);
    w.Map(entries.size());
    for (const auto& [key, entry] : entries) {
      w.Text(key);
      WriteEntry(w, entry);
    }
  }
  w.Key<"version">();
  w.Unsigned(s.version);
}

}  // namespace taskledger::internal
