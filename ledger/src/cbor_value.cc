// CborValue (taskledger/ledger/cbor_value.h): encoding with the Redis
// store's nlohmann-compatible writer (internal/cbor_writer.h), decoding with
// nlohmann::json::from_cbor.
#include "taskledger/ledger/cbor_value.h"

#include <cstddef>

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

nlohmann::json CborValue::Decode() const {
  if (!bytes_) return nullptr;
  // Never discarded: the bytes are one whole item written by Encode. `store`
  // reads the tag a binary value's subtype is written as back into it.
  return nlohmann::json::from_cbor(*bytes_, /*strict=*/true, /*allow_exceptions=*/false,
                                   nlohmann::json::cbor_tag_handler_t::store);
}

}  // namespace taskledger
