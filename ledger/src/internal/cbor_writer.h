// A CBOR writer that emits what nlohmann::json::to_cbor emits, byte for byte:
// definite lengths, the shortest integer and length heads (RFC 8949 section
// 3), doubles as float32 when exact, object members in std::map key order.
// The Redis store's record writers (redis_records.cc) build their bytes with
// it; the record layouts live there, the encoding rules here. Appends to a
// caller's string; one writer per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace taskledger::internal {

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
  // A whole data item encoded already (a CborValue's bytes), as it is.
  void Encoded(std::string_view item) { out_.append(item.data(), item.size()); }
  void Array(size_t n) { Head(4, n); }
  void Map(size_t n) { Head(5, n); }

  // A double as float32 when that is exact, else float64; NaN and the
  // infinities as half floats (nlohmann's choices).
  void Double(double d);

  // Any JSON value, members in the object's (std::map) key order.
  void Json(const nlohmann::json& j);

 private:
  void BigEndian(uint64_t v, int bytes);

  std::string& out_;
};

}  // namespace taskledger::internal
