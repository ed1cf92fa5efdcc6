// CborValue: an immutable JSON value kept as its CBOR encoding (RFC 8949;
// the very bytes nlohmann::json::to_cbor gives, which are what the Redis store
// writes for it), shared by every copy. A turn record's provenance sources
// (SourceRecord, state.h) hold the user messages and tool outputs this way
// rather than as a parsed copy: one buffer instead of a heap node per value
// (about a fifth of the memory of the parsed form for a typical tool output),
// O(1) to copy, and the Redis record writer embeds the bytes as they are. The
// same value always has the same bytes (shortest heads, members in std::map
// key order), so two are equal exactly when their bytes are. Thread-safe for
// concurrent const use (the bytes never change).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace taskledger {

class CborValue {
 public:
  // null (the one byte 0xf6), without an allocation.
  CborValue() = default;

  // `value` encoded once: O(size of value); kept in two allocations (the
  // shared string, and its bytes at exactly the encoded size). A discarded
  // value (never the result of parsing) is encoded as null.
  static CborValue Encode(const nlohmann::json& value);

  // A value whose bytes are already in Encode's form, kept as they are: for
  // the Redis store's record reader, which checked them
  // (CborReader::Canonical) and so need not decode and encode them again.
  // REQUIRES: `canonical` is one data item exactly as Encode writes the value
  // it holds. O(size).
  static CborValue FromCanonical(std::string_view canonical);

  // The value again, equal to the encoded one (same types, numbers, key
  // order, binary subtypes; a double kept as an exact float32 is the same).
  // The bytes always hold one whole data item written by Encode, so this
  // cannot fail. O(size).
  nlohmann::json Decode() const;

  // The encoded data item: never empty.
  std::string_view bytes() const {
    return bytes_ ? std::string_view(*bytes_) : std::string_view("\xf6", 1);
  }

  friend bool operator==(const CborValue& a, const CborValue& b) { return a.bytes() == b.bytes(); }

 private:
  std::shared_ptr<const std::string> bytes_;
};

}  // namespace taskledger
