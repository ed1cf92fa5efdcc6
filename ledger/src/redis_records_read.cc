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
#include <type_traits>
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
    Once once;
    return Members([&](std::string_view name) {
             if (name == "version") return once.First(0) && r_.Unsigned(s.version);
             if (name == "calls") return once.First(1) && CallsInto(s.calls);
             if (auto c = CategoryOfMember(name)) {
               return once.First(2 + static_cast<int>(*c)) && Entries(s.of(*c));
             }
             return r_.Skip();
           }) &&
           once.Has(0) && r_.AtEnd();
  }

  bool Turn(TurnRecord& t) {
    auto error = [](const json& x) -> Result<ExtractionError> { return DecodeExtractionError(x); };
    Once once;
    return Members([&](std::string_view name) {
             if (name == "turn") return once.First(0) && r_.Unsigned(t.turn);
             if (name == "at") return once.First(1) && r_.Signed(t.committed_at_ms);
             if (name == "updates") {
               return once.First(2) && Array(t.updates, &RecordReader::ReadUpdate);
             }
             if (name == "calls") {
               return once.First(3) && Array(t.calls, &RecordReader::ReadCall);
             }
             if (name == "decisions") {
               return once.First(4) && Documents(t.decisions, DecodeDecision);
             }
             if (name == "errors") return once.First(5) && Documents(t.errors, error);
             if (name == "sources") {
               return once.First(6) && Array(t.sources, &RecordReader::ReadSource);
             }
             return r_.Skip();
           }) &&
           once.Has(0) && r_.AtEnd();
  }

 private:
  // A map, each member's name given to `member`, which reads its value (or
  // passes over it) and returns false to decline the record.
  template <class F>
  bool Members(F&& member) {
    uint64_t n = 0;
    if (!r_.Map(n)) return false;
    for (uint64_t i = 0; i < n; ++i) {
      std::string_view name;
      if (!r_.Text(name) || !member(name)) return false;
    }
    return true;
  }

  // An array, each item read by `read`.
  template <class T>
  bool Array(std::vector<T>& out, bool (RecordReader::*read)(T&)) {
    uint64_t n = 0;
    if (!r_.Array(n)) return false;
    out.resize(n);
    for (T& item : out) {
      if (!(this->*read)(item)) return false;
    }
    return true;
  }

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

  // The provenance members an entry and an update share: nullopt if `name`
  // is none of them (then nothing was read), else whether it read.
  std::optional<bool> ProvenanceMember(std::string_view name, Once& once, Provenance& p) {
    std::string_view text;
    if (name == "pack") {
      if (!once.First(10) || !r_.Text(text)) return false;
      p.pack_version = strings_.Get(text);
      return true;
    }
    if (name == "rule") {
      if (!once.First(11) || !r_.Text(text)) return false;
      p.rule_id = strings_.Get(text);
      return true;
    }
    if (name == "source") {
      std::optional<SourceKind> kind;
      if (!once.First(12) || !r_.Text(text) || !(kind = ParseSourceKind(text))) return false;
      p.source = *kind;
      return true;
    }
    if (name == "source_id") {
      if (!once.First(13) || !r_.Text(text)) return false;
      p.source_id = strings_.Get(text);
      return true;
    }
    if (name == "turn") return once.First(14) && r_.Unsigned(p.turn);
    if (name == "verified") return once.First(15) && r_.Bool(p.verified);
    return std::nullopt;
  }

  // An optional unsigned / signed member into `out`.
  template <class T>
  bool Optional(std::optional<T>& out) {
    T v{};
    bool read = false;
    if constexpr (std::is_unsigned_v<T>) {
      read = r_.Unsigned(v);
    } else {
      read = r_.Signed(v);
    }
    if (read) out = v;
    return read;
  }

  bool ReadEntry(Entry& e) {
    Once once;
    return Members([&](std::string_view name) {
             if (auto read = ProvenanceMember(name, once, e.provenance)) return *read;
             if (name == "value") return once.First(0) && r_.Item(e.value);
             if (name == "expires_at_turn") {
               return once.First(1) && Optional(e.expires_at_turn);
             }
             if (name == "expires_at_ms") return once.First(2) && Optional(e.expires_at_ms);
             return r_.Skip();
           }) &&
           once.Has(0);
  }

  bool ReadUpdate(Update& u) {
    Once once;
    std::string_view text;
    std::optional<Category> category;
    std::optional<UpdateOp> op;
    const bool complete = Members([&](std::string_view name) {
      if (auto read = ProvenanceMember(name, once, u.provenance)) return *read;
      if (name == "value") return once.First(0) && r_.Item(u.value);
      if (name == "key") {
        if (!once.First(1) || !r_.Text(text)) return false;
        u.key = text;
        return true;
      }
      if (name == "category") {
        return once.First(2) && r_.Text(text) && (category = ParseCategory(text)).has_value();
      }
      if (name == "op") {
        return once.First(3) && r_.Text(text) && (op = ParseUpdateOp(text)).has_value();
      }
      if (name == "expire_after_turns") {
        return once.First(4) && Optional(u.expire_after_turns);
      }
      if (name == "expire_at_ms") return once.First(5) && Optional(u.expire_at_ms);
      return r_.Skip();
    });
    // The codec's rules: a key and a category; a set has a value; another
    // op's value is not read.
    if (!complete || !once.Has(1) || !category) return false;
    u.category = *category;
    u.op = op.value_or(UpdateOp::kSet);
    if (u.op == UpdateOp::kSet) return once.Has(0);
    u.value = nullptr;
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
    Once once;
    std::string_view text;
    // Reads a text member into `field`.
    auto text_into = [&](int bit, std::string& field) {
      if (!once.First(bit) || !r_.Text(text)) return false;
      field = text;
      return true;
    };
    return Members([&](std::string_view name) {
             if (name == "args") return once.First(0) && r_.Item(c.call.arguments);
             if (name == "id") return text_into(1, c.call.id);
             if (name == "tool") return text_into(2, c.call.tool);
             if (name == "outcome") return text_into(3, c.outcome);
             if (name == "turn") return once.First(4) && r_.Unsigned(c.turn);
             if (name == "writes") return once.First(5) && r_.Bool(c.writes);
             return r_.Skip();
           }) &&
           once.Has(2);
  }

  // DecodeSource's rules, with the message or output kept as the bytes they
  // are stored as when those are CborValue's own (CborReader::Canonical): no
  // JSON built and encoded again. Other bytes there decline.
  bool ReadSource(SourceRecord& s) {
    Once once;
    std::string_view kind, refused, tool, id, text, output;
    auto text_member = [&](int bit, std::string_view& out) {
      return once.First(bit) && r_.Text(out);
    };
    const bool complete = Members([&](std::string_view name) {
      if (name == "kind") return text_member(0, kind);
      if (name == "turn") return once.First(1) && r_.Unsigned(s.turn);
      if (name == "refused") return text_member(2, refused);
      if (name == "text") return once.First(3) && r_.Canonical(text);
      if (name == "tool") return text_member(4, tool);
      if (name == "id") return text_member(5, id);
      if (name == "output") return once.First(6) && r_.Canonical(output);
      return r_.Skip();
    });
    if (!complete || !once.Has(0) || !once.Has(1)) return false;
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
