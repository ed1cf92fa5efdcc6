// A CBOR reader of the forms the ledger's writer emits (internal/cbor_writer.h:
// definite lengths, integer and length heads, text and byte strings, a tag
// only as a binary value's subtype in a 1-8 byte head, false/true/null and
// floats). It reads from a byte range it does not own, checks every length
// against what is left, and nests at most kMaxDepth levels, so hostile or
// truncated bytes make a read return false, never read past the end or
// exhaust the stack.
//
// Two uses: CborValue::Decode (any JSON value, built as nlohmann::json::from_cbor
// would build it) and the Redis store's direct record readers
// (redis_records_read.cc), which walk a record's members and build the C++
// structs without a JSON document in between. One reader per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

namespace taskledger::internal {

class CborReader {
 public:
  // Deeper values than this are refused (false), not read.
  static constexpr int kMaxDepth = 2048;

  explicit CborReader(std::string_view bytes)
      : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}

  // One data item into `out`, as nlohmann::json::from_cbor (tag handler
  // `store`) builds it; false on bytes the writer never emits (indefinite
  // lengths, other tags and simple values, a map key that is not text, a key
  // twice) or a value past the end.
  bool Item(nlohmann::json& out) { return Item(out, 0); }

  // The initial byte's major type and its argument (a length, a count or an
  // integer; for major type 7 the raw bits). False at the end or on an
  // indefinite length or a reserved value.
  bool Head(uint8_t& major, uint64_t& n) {
    uint8_t low = 0;
    return Head(major, low, n);
  }

  // The next item if it is a text string (its bytes stay in the input).
  bool Text(std::string_view& out) {
    uint8_t major = 0;
    uint64_t n = 0;
    if (!Head(major, n) || major != 3 || n > Left()) return false;
    out = std::string_view(p_, n);
    p_ += n;
    return true;
  }
  // The next item if it is an unsigned integer.
  bool Unsigned(uint64_t& out) {
    uint8_t major = 0;
    return Head(major, out) && major == 0;
  }
  // The next item if it is an integer that fits int64_t.
  bool Signed(int64_t& out);
  // The next item if it is false or true.
  bool Bool(bool& out);
  // The head of a map or array (major 5 or 4) of `count` items.
  bool Map(uint64_t& count) { return Container(5, count); }
  bool Array(uint64_t& count) { return Container(4, count); }

  // Passes over one whole data item without building it.
  bool Skip() { return Walk(0, false); }

  // The bytes of the data item that starts here, passed over, if they are
  // exactly what CborWriter::Json writes for the value they hold (shortest
  // heads, definite lengths, map keys in strictly increasing std::map order,
  // a double as float32 when exact, NaN and the infinities as the writer's
  // half floats; no binary values): then they are the value's CborValue
  // bytes as they are. False, with the position unspecified, otherwise.
  bool Canonical(std::string_view& out) {
    const char* start = p_;
    if (!Walk(0, true)) return false;
    out = std::string_view(start, static_cast<size_t>(p_ - start));
    return true;
  }

  bool AtEnd() const { return p_ == end_; }

 private:
  size_t Left() const { return static_cast<size_t>(end_ - p_); }
  bool Head(uint8_t& major, uint8_t& low, uint64_t& n);
  bool Container(uint8_t want, uint64_t& count) {
    uint8_t major = 0;
    // Each item takes a byte at least: a count past the end is refused early.
    return Head(major, count) && major == want && count <= Left();
  }
  bool Item(nlohmann::json& out, int depth);
  // Passes over one item; with `canonical`, only one in CborWriter::Json's form.
  bool Walk(int depth, bool canonical);
  bool CanonicalText(std::string_view& out);
  static bool CanonicalSimple(uint8_t low, uint64_t n);
  static bool Simple(uint8_t low, uint64_t n, nlohmann::json& out);

  const char* p_;
  const char* end_;
};

}  // namespace taskledger::internal
