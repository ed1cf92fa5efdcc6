// CborValue (taskledger/ledger/cbor_value.h): encoding with the Redis
// store's nlohmann-compatible writer (internal/cbor_writer.h); decoding with
// the reader of the forms that writer emits (internal/cbor_reader.h), which
// builds the value nlohmann::json::from_cbor (tag handler `store`) would.
#include "taskledger/ledger/cbor_value.h"

#include <cstddef>
#include <string>

#include "internal/cbor_reader.h"
#include "internal/cbor_writer.h"

namespace taskledger {

CborValue CborValue::Encode(const nlohmann::json& value) {
  // Encoded into a per-thread scratch buffer first, then copied once into a
  // buffer of exactly its size: the kept bytes carry no growth slack. A
  // scratch grown past 1 MiB (a rare large output) is released, not kept.
  constexpr std::size_t kKeptScratch = std::size_t{1} << 20;
  thread_local std::string scratch;
  scratch.clear();
  internal::CborWriter writer(scratch);
  if (value.is_discarded()) {
    writer.Json(nullptr);
  } else {
    writer.Json(value);
  }
  CborValue encoded;
  encoded.bytes_ = std::make_shared<const std::string>(scratch);
  if (scratch.capacity() > kKeptScratch) std::string().swap(scratch);
  return encoded;
}

CborValue CborValue::FromCanonical(std::string_view canonical) {
  CborValue value;
  value.bytes_ = std::make_shared<const std::string>(canonical);
  return value;
}

nlohmann::json CborValue::Decode() const {
  if (!bytes_) return nullptr;
  internal::CborReader reader(*bytes_);
  nlohmann::json out;
  // The bytes are one whole item written by Encode, so this always reads;
  // were they anything else, null (no value) rather than a partial one.
  if (!reader.Item(out) || !reader.AtEnd()) return nullptr;
  return out;
}

}  // namespace taskledger
