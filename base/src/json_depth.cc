// JsonNestsDeeperThan (see taskledger/json_depth.h): one pass over the text.
// Where the target has SSE2 (every x86-64) it reads sixteen bytes at a time:
// bit masks of their quotes and brackets say which brackets lie outside
// strings, and only those are looked at one by one. A block with a backslash
// (or one an escape runs into) and the tail go byte by byte through the same
// state, as does the whole text on other targets.
#include "taskledger/base/json_depth.h"

#include <bit>
#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace taskledger {
namespace {

// The nesting state of the text read so far. A backslash inside a string
// escapes the byte after it, so a quote ends a string only after an even run
// of backslashes.
class DepthScan {
 public:
  explicit DepthScan(int max_depth) : max_depth_(max_depth) {}

  // Takes the byte at `at`, which must come after every byte taken before;
  // bytes skipped in between must not be quotes, backslashes or brackets.
  // True once the nesting passes the limit.
  bool Take(const char* at) {
    if (at == escaped_) return false;
    const char c = *at;
    if (in_string_) {
      if (c == '"') {
        in_string_ = false;
      } else if (c == '\\') {
        escaped_ = at + 1;
      }
      return false;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '[' || c == '{') {
      return ++depth_ > max_depth_;
    } else if (c == ']' || c == '}') {
      --depth_;
    }
    return false;
  }

#if defined(__SSE2__)
  // Takes the sixteen bytes at `p`, given as masks (bit i: byte p[i]) of their
  // quotes, backslashes, opening and closing brackets. True once the nesting
  // passes the limit.
  bool TakeBlock(const char* p, uint32_t quotes, uint32_t backslashes, uint32_t opens,
                 uint32_t closes) {
    if (backslashes != 0 || escaped_ == p) {
      for (uint32_t m = quotes | backslashes | opens | closes; m != 0; m &= m - 1) {
        if (Take(p + std::countr_zero(m))) return true;
      }
      return false;
    }
    // Bit i of `inside`: byte i is in a string (an opening quote counts as
    // inside, a closing one as outside). Without escapes, every quote toggles.
    uint32_t inside = quotes;
    inside ^= inside << 1;
    inside ^= inside << 2;
    inside ^= inside << 4;
    inside ^= inside << 8;
    if (in_string_) inside = ~inside;
    inside &= 0xFFFF;
    in_string_ = (inside >> 15) != 0;
    // Brackets are few next to quotes: follow those outside strings in order.
    for (uint32_t m = (opens | closes) & ~inside; m != 0; m &= m - 1) {
      if ((opens >> std::countr_zero(m)) & 1) {
        if (++depth_ > max_depth_) return true;
      } else {
        --depth_;
      }
    }
    return false;
  }
#endif

 private:
  const int max_depth_;
  int depth_ = 0;
  bool in_string_ = false;
  const char* escaped_ = nullptr;  // the byte after a backslash in a string
};

bool Matters(char c) {
  return c == '"' || c == '\\' || c == '[' || c == '{' || c == ']' || c == '}';
}

}  // namespace

bool JsonNestsDeeperThan(std::string_view text, int max_depth) {
  DepthScan scan(max_depth);
  const char* p = text.data();
  const char* const end = p + text.size();
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  // With bit 0x20 set, '[' reads as '{' and ']' as '}'.
  const __m128i fold = _mm_set1_epi8(0x20);
  const __m128i open = _mm_set1_epi8('{');
  const __m128i close = _mm_set1_epi8('}');
  auto mask = [](__m128i eq) { return static_cast<uint32_t>(_mm_movemask_epi8(eq)); };
  for (; end - p >= 16; p += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i folded = _mm_or_si128(bytes, fold);
    if (scan.TakeBlock(p, mask(_mm_cmpeq_epi8(bytes, quote)),
                       mask(_mm_cmpeq_epi8(bytes, backslash)), mask(_mm_cmpeq_epi8(folded, open)),
                       mask(_mm_cmpeq_epi8(folded, close)))) {
      return true;
    }
  }
#endif
  for (; p < end; ++p) {
    if (Matters(*p) && scan.Take(p)) return true;
  }
  return false;
}

Result<int> ParseMaxJsonDepth(const nlohmann::json& value) {
  if (!value.is_number_integer() || value.get<int64_t>() < 1 ||
      value.get<int64_t>() > kMaxJsonDepthCeiling) {
    return Status::InvalidArgument("max_depth must be an integer in 1.." +
                                   std::to_string(kMaxJsonDepthCeiling));
  }
  return value.get<int>();
}

}  // namespace taskledger
