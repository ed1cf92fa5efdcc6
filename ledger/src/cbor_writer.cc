// The out-of-line parts of the nlohmann-compatible CBOR writer (see
// internal/cbor_writer.h): doubles and whole JSON values.
#include "internal/cbor_writer.h"

#include <bit>
#include <cmath>
#include <limits>

namespace taskledger::internal {

using nlohmann::json;

void CborWriter::Double(double d) {
  if (std::isnan(d)) {
    out_.append("\xf9\x7e\x00", 3);
  } else if (std::isinf(d)) {
    out_.append(d > 0 ? std::string_view("\xf9\x7c\x00", 3) : std::string_view("\xf9\xfc\x00", 3));
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

void CborWriter::Json(const json& j) {
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

void CborWriter::BigEndian(uint64_t v, int bytes) {
  for (int shift = (bytes - 1) * 8; shift >= 0; shift -= 8) {
    out_.push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

}  // namespace taskledger::internal
