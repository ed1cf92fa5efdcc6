// CborValue (taskledger/ledger/cbor_value.h): encoding with the Redis
// store's nlohmann-compatible writer (internal/cbor_writer.h); decoding with
// a reader of the forms that writer emits (definite lengths, a tag only as a
// binary value's subtype), which builds the value nlohmann::json::from_cbor
// (tag handler `store`) would, but copies a string's bytes at once where
// nlohmann's reader appends them one at a time (a 4 KB page: ~30x fewer
// instructions).
#include "taskledger/ledger/cbor_value.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "internal/cbor_writer.h"

namespace taskledger {
namespace {

using nlohmann::json;

class Reader {
 public:
  explicit Reader(std::string_view bytes) : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}

  // One data item into `out`; false on bytes Encode never writes.
  bool Item(json& out) {
    uint8_t major = 0, low = 0;
    uint64_t n = 0;
    if (!Head(major, low, n)) return false;
    switch (major) {
      case 0:
        out = n;
        return true;
      case 1:
        if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
        out = -1 - static_cast<int64_t>(n);
        return true;
      case 2: {
        if (n > Left()) return false;
        json::binary_t::container_type data(p_, p_ + n);
        p_ += n;
        out = json::binary(std::move(data));
        return true;
      }
      case 3:
        if (n > Left()) return false;
        out = std::string(p_, n);
        p_ += n;
        return true;
      case 4:
        if (n > Left()) return false;  // each item takes a byte at least
        out = json::array();
        out.get_ref<json::array_t&>().resize(n);
        for (json& item : out.get_ref<json::array_t&>()) {
          if (!Item(item)) return false;
        }
        return true;
      case 5: {
        if (n > Left()) return false;
        out = json::object();
        auto& members = out.get_ref<json::object_t&>();
        for (uint64_t i = 0; i < n; ++i) {
          json key;
          if (!Item(key) || !key.is_string()) return false;
          // Keys arrive in std::map order: each goes in at the end.
          auto at =
              members.emplace_hint(members.end(), std::move(key.get_ref<std::string&>()), json());
          if (!Item(at->second)) return false;
        }
        return members.size() == n;  // no key twice
      }
      case 6:  // a binary value's subtype
        if (!Item(out) || !out.is_binary()) return false;
        out.get_binary().set_subtype(n);
        return true;
      default:
        return Simple(low, n, out);
    }
  }

  bool AtEnd() const { return p_ == end_; }

 private:
  size_t Left() const { return static_cast<size_t>(end_ - p_); }

  // The initial byte (major type, low five bits) and its argument.
  bool Head(uint8_t& major, uint8_t& low, uint64_t& n) {
    if (p_ == end_) return false;
    const auto initial = static_cast<uint8_t>(*p_++);
    major = initial >> 5;
    low = initial & 0x1f;
    if (low < 24) {
      n = low;
      return true;
    }
    if (low > 27) return false;  // indefinite lengths and reserved values
    const size_t width = size_t{1} << (low - 24);
    if (width > Left()) return false;
    n = 0;
    for (size_t i = 0; i < width; ++i) n = (n << 8) | static_cast<uint8_t>(*p_++);
    return true;
  }

  // Major type 7: false, true, null, and floats.
  static bool Simple(uint8_t low, uint64_t n, json& out) {
    switch (low) {
      case 20:
        out = false;
        return true;
      case 21:
        out = true;
        return true;
      case 22:
        out = nullptr;
        return true;
      case 25:  // half precision: the writer's NaN and infinities only
        if (n == 0x7e00) {
          out = std::numeric_limits<double>::quiet_NaN();
        } else if (n == 0x7c00 || n == 0xfc00) {
          out = n == 0x7c00 ? std::numeric_limits<double>::infinity()
                            : -std::numeric_limits<double>::infinity();
        } else {
          return false;
        }
        return true;
      case 26: {
        float f = 0;
        const auto bits = static_cast<uint32_t>(n);
        std::memcpy(&f, &bits, sizeof f);
        out = static_cast<double>(f);
        return true;
      }
      case 27: {
        double d = 0;
        std::memcpy(&d, &n, sizeof d);
        out = d;
        return true;
      }
      default:
        return false;
    }
  }

  const char* p_;
  const char* end_;
};

}  // namespace

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
  Reader reader(*bytes_);
  json out;
  // The bytes are one whole item written by Encode, so this always reads;
  // were they anything else, null (no value) rather than a partial one.
  if (!reader.Item(out) || !reader.AtEnd()) return nullptr;
  return out;
}

}  // namespace taskledger
