// CborReader (internal/cbor_reader.h): heads, whole values built as
// nlohmann::json, and passing over values, over a byte range checked at
// every step. A string's bytes are copied at once where nlohmann's reader
// appends them one at a time (a 4 KB page: ~30x fewer instructions).
#include "internal/cbor_reader.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace taskledger::internal {

using nlohmann::json;

bool CborReader::Head(uint8_t& major, uint8_t& low, uint64_t& n) {
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

bool CborReader::Signed(int64_t& out) {
  uint8_t major = 0;
  uint64_t n = 0;
  if (!Head(major, n) || n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return false;
  }
  if (major == 0) {
    out = static_cast<int64_t>(n);
    return true;
  }
  if (major == 1) {
    out = -1 - static_cast<int64_t>(n);
    return true;
  }
  return false;
}

bool CborReader::Bool(bool& out) {
  if (p_ == end_) return false;
  const auto initial = static_cast<uint8_t>(*p_);
  if (initial != 0xf4 && initial != 0xf5) return false;
  out = initial == 0xf5;
  ++p_;
  return true;
}

bool CborReader::Item(json& out, int depth) {
  if (depth > kMaxDepth) return false;
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
        if (!Item(item, depth + 1)) return false;
      }
      return true;
    case 5: {
      if (n > Left()) return false;
      out = json::object();
      auto& members = out.get_ref<json::object_t&>();
      for (uint64_t i = 0; i < n; ++i) {
        std::string_view key;
        if (!Text(key)) return false;
        // Keys arrive in std::map order: each goes in at the end.
        auto at = members.emplace_hint(members.end(), std::string(key), json());
        if (!Item(at->second, depth + 1)) return false;
      }
      return members.size() == n;  // no key twice
    }
    case 6:  // a binary value's subtype, in the 1-8 byte forms the writer uses
      // (nlohmann's reader refuses or drops an immediate tag 0..23)
      if (low < 24 || !Item(out, depth + 1) || !out.is_binary()) return false;
      out.get_binary().set_subtype(n);
      return true;
    default:
      return Simple(low, n, out);
  }
}

namespace {

// Whether a head of additional information `low` with argument `n` is the
// shortest for n (RFC 8949 section 4.2.1: preferred serialization).
bool Shortest(uint8_t low, uint64_t n) {
  switch (low) {
    case 24:
      return n >= 24;
    case 25:
      return n > 0xff;
    case 26:
      return n > 0xffff;
    case 27:
      return n > 0xffffffffULL;
    default:
      return true;  // the argument is the additional information itself
  }
}

}  // namespace

bool CborReader::CanonicalText(std::string_view& out) {
  uint8_t major = 0, low = 0;
  uint64_t n = 0;
  if (!Head(major, low, n) || major != 3 || !Shortest(low, n) || n > Left()) return false;
  out = std::string_view(p_, n);
  p_ += n;
  return true;
}

bool CborReader::Walk(int depth, bool canonical) {
  if (depth > kMaxDepth) return false;
  uint8_t major = 0, low = 0;
  uint64_t n = 0;
  if (!Head(major, low, n)) return false;
  if (canonical && major != 7 && !Shortest(low, n)) return false;
  switch (major) {
    case 0:
      return true;
    case 1:
      return n <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    case 2:  // binary values are never in a canonical item (CborValue's Encode)
      if (canonical) return false;
      [[fallthrough]];
    case 3:
      if (n > Left()) return false;
      p_ += n;
      return true;
    case 4:
      if (n > Left()) return false;
      for (uint64_t i = 0; i < n; ++i) {
        if (!Walk(depth + 1, canonical)) return false;
      }
      return true;
    case 5: {
      if (n > Left()) return false;
      std::string_view previous;
      for (uint64_t i = 0; i < n; ++i) {
        std::string_view key;
        if (!(canonical ? CanonicalText(key) : Text(key))) return false;
        // Canonical: std::map order, each key once.
        if (canonical && i > 0 && !(previous < key)) return false;
        previous = key;
        if (!Walk(depth + 1, canonical)) return false;
      }
      return true;
    }
    case 6: {  // as Item: a binary value's subtype, 1-8 byte forms only
      if (canonical || low < 24) return false;
      const char* tagged = p_;
      uint8_t inner = 0;
      uint64_t size = 0;
      if (!Head(inner, size) || inner != 2) return false;
      p_ = tagged;
      return Walk(depth + 1, false);
    }
    default: {
      if (canonical) return CanonicalSimple(low, n);
      json ignored;
      return Simple(low, n, ignored);
    }
  }
}

// Major type 7 as the writer writes it: false, true, null; a double as
// float32 when exact, else float64; NaN and the infinities as half floats.
bool CborReader::CanonicalSimple(uint8_t low, uint64_t n) {
  switch (low) {
    case 20:
    case 21:
    case 22:
      return true;
    case 25:
      return n == 0x7e00 || n == 0x7c00 || n == 0xfc00;
    case 26: {
      float f = 0;
      const auto bits = static_cast<uint32_t>(n);
      std::memcpy(&f, &bits, sizeof f);
      return std::isfinite(f);
    }
    case 27: {
      double d = 0;
      std::memcpy(&d, &n, sizeof d);
      const bool as_float = d >= static_cast<double>(std::numeric_limits<float>::lowest()) &&
                            d <= static_cast<double>(std::numeric_limits<float>::max()) &&
                            static_cast<double>(static_cast<float>(d)) == d;
      return std::isfinite(d) && !as_float;
    }
    default:
      return false;
  }
}

// Major type 7: false, true, null, and floats.
bool CborReader::Simple(uint8_t low, uint64_t n, json& out) {
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

}  // namespace taskledger::internal
