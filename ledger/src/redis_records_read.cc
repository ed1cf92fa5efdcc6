// Direct readers of the Redis store's state and turn records (see
// internal/redis_records.h): the C++ structs built straight from the CBOR
// bytes, with no JSON document of the whole record in between. Reading a
// long conversation's snapshot was mostly building and freeing that
// document: a map node and a string per member name, nine members per entry.
// Only the JSON values a record holds (entry and update values, call
// arguments, and the rarer decisions and errors) are built as
// nlohmann::json, by the same reader CborValue uses; a provenance source's
// message or output is kept as the bytes it is stored as, which are
// CborValue's own (checked: CborReader::Canonical).
//
// These readers accept exactly the layout the writers in redis_records.cc
// emit, in any member order, and decline (nullopt) anything else: a member
// twice, a null member, an indefinite length, a member of the wrong type. The
// caller then decodes with the codec (DecodeState / DecodeTurn of
// from_cbor), which accepts more and words the error, so what is read and
// every error message are the codec's. redis_records_test.cc and the
// fuzz_records target hold the two paths to the same result. The provenance
// strings of one record are interned: entries from one extraction share one
// source id, rule id and pack version again, as they did when staged. Pure
// functions; thread-safe.
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "internal/cbor_reader.h"
#include "internal/redis_records.h"

#include "taskledger/ledger/codec.h"

namespace taskledger::internal {
namespace {

using nlohmann::json;

// The provenance strings of one record, each kept once. The views point
// into the record's bytes.
class Strings {
 public:
  SharedString Get(std::string_view text) {
    if (text.empty()) return {};
    auto [it, added] = seen_.try_emplace(text);
    if (added) it->second = SharedString(text);
    return it->second;
  }

 private:
  std::unordered_map<std::string_view, SharedString> seen_;
};

// Members already read from one map, so that a member twice declines.
class Once {
 public:
  bool First(int bit) {
    const uint32_t mask = uint32_t{1} << bit;
    if ((seen_ & mask) != 0) return false;
    seen_ |= mask;
    return true;
  }
  bool Has(int bit) const { return (seen_ & (uint32_t{1} << bit)) != 0; }

 private:
  uint32_t seen_ = 0;
};

class RecordReader {
 public:
  explicit RecordReader(std::string_view bytes) : r_(bytes) {}

  bool State(LedgerState& s) {
    uint64_t n = 0;
    if (!r_.Map(n)) return false;
    Once once;
    for (uint64_t i = 0; i < n; ++i) {
      std::string_view name;
      if (!r_.Text(name)) return false;
      if (name == "version") {
        if (!once.First(0) || !r_.Unsigned(s.version)) return false;
      } else if (name == "calls") {
        if (!once.First(1) || !CallsInto(s.calls)) return false;
      } else if (auto c = CategoryOfMember(name)) {
        if (!once.First(2 + static_cast<int>(*c)) || !Entries(s.of(*c))) return false;
      } else if (!r_.Skip()) {
        return false;
      }
    }
    return once.Has(0) && r_.AtEnd();
  }

  bool Turn(TurnRecord& t) {
    uint64_t n = 0;
    if (!r_.Map(n)) return false;
    Once once;
    for (uint64_t i = 0; i < n; ++i) {
      std::string_view name;
      if (!r_.Text(name)) return false;
      bool ok = false;
      if (name == "turn") {
        ok = once.First(0) && r_.Unsigned(t.turn);
      } else if (name == "at") {
        ok = once.First(1) && r_.Signed(t.committed_at_ms);
      } else if (name == "updates") {
        ok = once.First(2) && Updates(t.updates);
      } else if (name == "calls") {
        ok = once.First(3) && Calls(t.calls);
      } else if (name == "decisions") {
        ok = once.First(4) && Documents(t.decisions, DecodeDecision);
      } else if (name == "errors") {
        auto error = [](const json& x) -> Result<ExtractionError> {
          return DecodeExtractionError(x);
        };
        ok = once.First(5) && Documents(t.errors, error);
      } else if (name == "sources") {
        ok = once.First(6) && Sources(t.sources);
      } else {
        ok = r_.Skip();
      }
      if (!ok) return false;
    }
    return once.Has(0) && r_.AtEnd();
  }

 private:
  static std::optional<Category> CategoryOfMember(std::string_view name) {
    if (!name.ends_with('s')) return std::nullopt;
    name.remove_suffix(1);
    for (Category c : kAllCategories) {
      if (CategoryName(c) == name) return c;
    }
    return std::nullopt;
  }

  bool Entries(EntryMap& entries) {
    uint64_t n = 0;
    if (!r_.Map(n)) return false;
    for (uint64_t i = 0; i < n; ++i) {
      std::string_view key;
      Entry e;
      if (!r_.Text(key) || !ReadEntry(e)) return false;
      entries.Set(key, std::move(e));  // a key twice: the last, as in a JSON object
    }
    return true;
  }

  // The provenance members an entry and an update share; false if `name`
  // is none of them (then nothing was read).
  bool ProvenanceMember(std::string_view name, Once& once, Provenance& p, bool& ok) {
    std::string_view text;
    if (name == "pack") {
      ok = once.First(10) && r_.Text(text);
      p.pack_version = strings_.Get(text);
    } else if (name == "rule") {
      ok = once.First(11) && r_.Text(text);
      p.rule_id = strings_.Get(text);
    } else if (name == "source") {
      std::optional<SourceKind> kind;
      ok = once.First(12) && r_.Text(text) && (kind = ParseSourceKind(text)).has_value();
      if (ok) p.source = *kind;
    } else if (name == "source_id") {
      ok = once.First(13) && r_.Text(text);
      p.source_id = strings_.Get(text);
    } else if (name == "turn") {
      ok = once.First(14) && r_.Unsigned(p.turn);
    } else if (name == "verified") {
      ok = once.First(15) && r_.Bool(p.verified);
    } else {
      return false;
    }
    return true;
  }

  bool ReadEntry(Entry& e) {
    uint64_t n = 0;
    if (!r_.Map(n)) return false;
    Once once;
    for (uint64_t i = 0; i < n; ++i) {
      std::string_view name;
      if (!r_.Text(name)) return false;
      bool ok = false;
      if (ProvenanceMember(name, once, e.provenance, ok)) {
        // read
      } else if (name == "value") {
        ok = once.First(0) && r_.Item(e.value);
      } else if (name == "expires_at_turn") {
        uint64_t turn = 0;
        ok = once.First(1) && r_.Unsigned(turn);
        e.expires_at_turn = turn;
      } else if (name == "expires_at_ms") {
        int64_t ms = 0;
        ok = once.First(2) && r_.Signed(ms);
        e.expires_at_ms = ms;
      } else {
        ok = r_.Skip();
      }
      if (!ok) return false;
    }
    return once.Has(0);
  }

  bool Updates(std::vector<Update>& out) {
    uint64_t n = 0;
    if (!r_.Array(n)) return false;
    out.resize(n);
    for (Update& u : out) {
      if (!ReadUpdate(u)) return false;
    }
    return true;
  }

  bool ReadUpdate(Update& u) {
    uint64_t n = 0;
    if (!r_.Map(n)) return false;
    Once once;
    for (uint64_t i = 0; i < n; ++i) {
      std::string_view name;
      if (!r_.Text(name)) return false;
      bool ok = false;
      std::string_view text;
      if (ProvenanceMember(name, once, u.provenance, ok)) {
        // read
      } else if (name == "value") {
        ok = once.First(0) && r_.Item(u.value);
      } else if (name == "key") {
        ok = once.First(1) && r_.Text(text);
        u.key = text;
      } else if (name == "category") {
        std::optional<Category> c;
        ok = once.First(2) && r_.Text(text) && (c = ParseCategory(text)).has_value();
        if (ok) u.category = *c;
      } else if (name == "op") {
        std::optional<UpdateOp> op;
        ok = once.First(3) && r_.Text(text) && (op = ParseUpdateOp(text)).has_value();
        if (ok) u.op = *op;
      } else if (name == "expire_after_turns") {
        uint64_t turns = 0;
        ok = once.First(4) && r_.Unsigned(turns);
        u.expire_after_turns = turns;
      } else if (name == "expire_at_ms") {
        int64_t ms = 0;
        ok = once.First(5) && r_.Signed(ms);
        u.expire_at_ms = ms;
      } else {
        ok = r_.Skip();
      }
      if (!ok) return false;
    }
    // The codec's rules: a key and a category; a set has a value; another
    // op's value is not read.
    if (!once.Has(1) || !once.Has(2)) return false;
    if (u.op == UpdateOp::kSet) return once.Has(0);
    u.value = nullptr;
    return true;
  }

  bool Calls(std::vector<CallRecord>& out) {
    uint64_t n = 0;
    if (!r_.Array(n)) return false;
    out.resize(n);
    for (CallRecord& c : out) {
      if (!ReadCall(c)) return false;
    }
    return true;
  }

  bool CallsInto(CallList& out) {
    uint64_t n = 0;
    if (!r_.Array(n)) return false;
    for (uint64_t i = 0; i < n; ++i) {
      CallRecord c;
      if (!ReadCall(c)) return false;
      out.push_back(std::move(c));
    }
    return true;
  }

  bool ReadCall(CallRecord& c) {
    uint64_t n = 0;
    if (!r_.Map(n)) return false;
    Once once;
    for (uint64_t i = 0; i < n; ++i) {
      std::string_view name;
      if (!r_.Text(name)) return false;
      bool ok = false;
      std::string_view text;
      if (name == "args") {
        ok = once.First(0) && r_.Item(c.call.arguments);
      } else if (name == "id") {
        ok = once.First(1) && r_.Text(text);
        c.call.id = text;
      } else if (name == "tool") {
        ok = once.First(2) && r_.Text(text);
        c.call.tool = text;
      } else if (name == "outcome") {
        ok = once.First(3) && r_.Text(text);
        c.outcome = text;
      } else if (name == "turn") {
        ok = once.First(4) && r_.Unsigned(c.turn);
      } else if (name == "writes") {
        ok = once.First(5) && r_.Bool(c.writes);
      } else {
        ok = r_.Skip();
      }
      if (!ok) return false;
    }
    return once.Has(2);
  }

  bool Sources(std::vector<SourceRecord>& out) {
    uint64_t n = 0;
    if (!r_.Array(n)) return false;
    out.resize(n);
    for (SourceRecord& s : out) {
      if (!ReadSource(s)) return false;
    }
    return true;
  }

  // DecodeSource's rules, with the message or output kept as the bytes they
  // are stored as when those are CborValue's own (CborReader::Canonical): no
  // JSON built and encoded again. Other bytes there decline.
  bool ReadSource(SourceRecord& s) {
    uint64_t n = 0;
    if (!r_.Map(n)) return false;
    Once once;
    std::string_view kind, refused, tool, id, text, output;
    for (uint64_t i = 0; i < n; ++i) {
      std::string_view name;
      if (!r_.Text(name)) return false;
      bool ok = false;
      if (name == "kind") {
        ok = once.First(0) && r_.Text(kind);
      } else if (name == "turn") {
        ok = once.First(1) && r_.Unsigned(s.turn);
      } else if (name == "refused") {
        ok = once.First(2) && r_.Text(refused);
      } else if (name == "text") {
        ok = once.First(3) && r_.Canonical(text);
      } else if (name == "tool") {
        ok = once.First(4) && r_.Text(tool);
      } else if (name == "id") {
        ok = once.First(5) && r_.Text(id);
      } else if (name == "output") {
        ok = once.First(6) && r_.Canonical(output);
      } else {
        ok = r_.Skip();
      }
      if (!ok) return false;
    }
    if (!once.Has(0) || !once.Has(1)) return false;
    s.refused = refused;
    if (kind == "user") {
      s.kind = SourceRecord::Kind::kUserMessage;
      // The text, when there, is a string (a text item's first byte is 0x60..0x7b).
      const bool is_text = !text.empty() && (static_cast<uint8_t>(text[0]) >> 5) == 3;
      if (once.Has(3) && !is_text) return false;
      if (refused.empty()) {
        if (!is_text) return false;
        s.content = CborValue::FromCanonical(text);
      }
      return true;
    }
    if (kind == "tool") {
      s.kind = SourceRecord::Kind::kToolOutput;
      if (!once.Has(4) || !once.Has(5)) return false;
      s.tool = tool;
      s.call_id = id;
      if (refused.empty()) {
        if (!once.Has(6)) return false;
        s.content = CborValue::FromCanonical(output);
      }
      return true;
    }
    return false;
  }

  // An array of rarer records, each built as JSON and decoded by the codec.
  template <class T, class Decode>
  bool Documents(std::vector<T>& out, Decode decode) {
    uint64_t n = 0;
    if (!r_.Array(n)) return false;
    out.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      json item;
      if (!r_.Item(item)) return false;
      auto record = decode(item);
      if (!record.has_value()) return false;
      out.push_back(std::move(record.value()));
    }
    return true;
  }

  CborReader r_;
  Strings strings_;
};

}  // namespace

std::optional<LedgerState> ReadStateRecord(std::string_view bytes) {
  LedgerState state;
  if (!RecordReader(bytes).State(state)) return std::nullopt;
  return state;
}

std::optional<TurnRecord> ReadTurnRecord(std::string_view bytes) {
  TurnRecord turn;
  if (!RecordReader(bytes).Turn(turn)) return std::nullopt;
  return turn;
}

}  // namespace taskledger::internal
