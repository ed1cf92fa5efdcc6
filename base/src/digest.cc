// SHA-256 (FIPS 180-4, written from the standard so no crypto library is
// needed; on x86-64 CPUs with the SHA extensions the compression runs on
// them, chosen once at run time) and canonical JSON. See taskledger/digest.h. ArgsHash, on every
// policy decision and every entry a rule read, writes the canonical text
// directly (CanonicalWriter) instead of building CanonicalValue's copy first.
#include "taskledger/base/digest.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

namespace taskledger {
namespace {

constexpr std::array<uint32_t, 64> kRound = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void Compress(std::array<uint32_t, 8>& h, const unsigned char* block) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i) {
    w[i] = (uint32_t{block[4 * i]} << 24) | (uint32_t{block[4 * i + 1]} << 16) |
           (uint32_t{block[4 * i + 2]} << 8) | uint32_t{block[4 * i + 3]};
  }
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t s1 = Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = k + s1 + ch + kRound[i] + w[i];
    uint32_t s0 = Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = s0 + maj;
    k = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += k;
}

#if defined(__x86_64__)
// SHA-256 compression with the x86 SHA extensions (SHA-NI), for CPUs that
// have them; the same state update as Compress, four rounds per step.
__attribute__((target("sha,sse4.1"))) void CompressNi(std::array<uint32_t, 8>& h,
                                                      const unsigned char* data, size_t blocks) {
  const __m128i kByteSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&h[0]));     // DCBA
  __m128i state1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&h[4]));  // HGFE
  tmp = _mm_shuffle_epi32(tmp, 0xB1);                                         // CDAB
  state1 = _mm_shuffle_epi32(state1, 0x1B);                                   // EFGH
  __m128i state0 = _mm_alignr_epi8(tmp, state1, 8);                           // ABEF
  state1 = _mm_blend_epi16(state1, tmp, 0xF0);                                // CDGH
  for (; blocks > 0; --blocks, data += 64) {
    const __m128i abef = state0;
    const __m128i cdgh = state1;
    __m128i w[4];
    for (int i = 0; i < 16; ++i) {
      if (i < 4) {
        w[i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 16 * i)),
                                kByteSwap);
      }
      __m128i msg = _mm_add_epi32(
          w[i % 4], _mm_loadu_si128(reinterpret_cast<const __m128i*>(&kRound[4 * i])));
      state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
      if (i >= 3 && i <= 14) {
        __m128i& next = w[(i + 1) % 4];
        next = _mm_add_epi32(next, _mm_alignr_epi8(w[i % 4], w[(i + 3) % 4], 4));
        next = _mm_sha256msg2_epu32(next, w[i % 4]);
      }
      msg = _mm_shuffle_epi32(msg, 0x0E);
      state0 = _mm_sha256rnds2_epu32(state0, state1, msg);
      if (i >= 1 && i <= 12) {
        w[(i + 3) % 4] = _mm_sha256msg1_epu32(w[(i + 3) % 4], w[i % 4]);
      }
    }
    state0 = _mm_add_epi32(state0, abef);
    state1 = _mm_add_epi32(state1, cdgh);
  }
  tmp = _mm_shuffle_epi32(state0, 0x1B);        // FEBA
  state1 = _mm_shuffle_epi32(state1, 0xB1);     // DCHG
  state0 = _mm_blend_epi16(tmp, state1, 0xF0);  // DCBA
  state1 = _mm_alignr_epi8(state1, tmp, 8);     // HGFE
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&h[0]), state0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&h[4]), state1);
}

// Whether this CPU has the SHA extensions (CPUID leaf 7, EBX bit 29) and
// SSE4.1 (leaf 1, ECX bit 19), which CompressNi also uses.
bool HasShaNi() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0 || (c & (1u << 19)) == 0) return false;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  return (b & (1u << 29)) != 0;
}
#endif

// Compresses `blocks` consecutive 64-byte blocks: with the SHA extensions
// when the CPU has them (about 5x faster), else portably. Same result.
void CompressBlocks(std::array<uint32_t, 8>& h, const unsigned char* data, size_t blocks) {
#if defined(__x86_64__)
  static const bool kShaNi = HasShaNi();
  if (kShaNi) {
    CompressNi(h, data, blocks);
    return;
  }
#endif
  for (size_t i = 0; i < blocks; ++i) Compress(h, data + 64 * i);
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  std::array<uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  size_t full = n / 64;
  CompressBlocks(h, p, full);
  unsigned char tail[128] = {0};
  size_t rest = n - full * 64;
  if (rest) std::memcpy(tail, p + full * 64, rest);
  tail[rest] = 0x80;
  size_t tail_len = rest < 56 ? 64 : 128;
  uint64_t bits = static_cast<uint64_t>(n) * 8;
  for (int i = 0; i < 8; ++i) tail[tail_len - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  CompressBlocks(h, tail, tail_len / 64);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(64, '0');
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) out[8 * i + j] = kHex[(h[i] >> (28 - 4 * j)) & 0xf];
  }
  return out;
}

nlohmann::json CanonicalValue(const nlohmann::json& v) {
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9.0e15) {
      return static_cast<int64_t>(d);
    }
    return v;
  }
  if (v.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, x] : v.items()) out[k] = CanonicalValue(x);
    return out;
  }
  if (v.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& x : v) out.push_back(CanonicalValue(x));
    return out;
  }
  return v;
}

Result<std::string> CanonicalJson(const nlohmann::json& value) {
  try {
    return CanonicalValue(value).dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("not encodable as JSON: ") + e.what());
  }
}

namespace {

// Whether a key is written by dump() exactly as its bytes: printable ASCII
// with nothing to escape.
bool PlainKey(std::string_view key) {
  for (const char c : key) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') return false;
  }
  return true;
}

// Appends CanonicalValue(v).dump(-1, ' ', false, replace) to `out` without
// building the canonical copy: structure is written here, every leaf by
// nlohmann's own serializer (the same escaping, number and U+FFFD
// formatting as dump()), which writes straight into `out`.
class CanonicalWriter {
 public:
  explicit CanonicalWriter(std::string& out)
      : out_(out),
        leaf_(std::make_shared<nlohmann::detail::output_string_adapter<char, std::string>>(out),
              ' ', nlohmann::json::error_handler_t::replace) {}

  void Write(const nlohmann::json& v) {
    switch (v.type()) {
      case nlohmann::json::value_t::object: {
        out_.push_back('{');
        bool first = true;
        for (const auto& [k, x] : v.get_ref<const nlohmann::json::object_t&>()) {
          if (!first) out_.push_back(',');
          first = false;
          if (PlainKey(k)) {
            out_.push_back('"');
            out_.append(k);
            out_.push_back('"');
          } else {
            leaf_.dump(nlohmann::json(k), false, false, 0);
          }
          out_.push_back(':');
          Write(x);
        }
        out_.push_back('}');
        return;
      }
      case nlohmann::json::value_t::array: {
        out_.push_back('[');
        bool first = true;
        for (const auto& x : v) {
          if (!first) out_.push_back(',');
          first = false;
          Write(x);
        }
        out_.push_back(']');
        return;
      }
      case nlohmann::json::value_t::number_float: {
        const double d = v.get<double>();
        if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9.0e15) {
          out_.append(std::to_string(static_cast<int64_t>(d)));
          return;
        }
        break;
      }
      default:
        break;
    }
    leaf_.dump(v, false, false, 0);
  }

 private:
  std::string& out_;
  nlohmann::detail::serializer<nlohmann::json> leaf_;
};

}  // namespace

std::string ArgsHash(const nlohmann::json& args) {
  std::string text;
  CanonicalWriter(text).Write(args);
  return Sha256Hex(text);
}

}  // namespace taskledger
