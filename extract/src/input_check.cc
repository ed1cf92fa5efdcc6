// UTF-8 validation, JSON depth pre-scan and the iterative check of parsed
// outputs. Pure functions; thread-safe.
#include "internal/input_check.h"

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace taskledger::extract_internal {

bool IsValidUtf8(std::string_view s, size_t* bad_offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    // Fast path: eight ASCII bytes at a time.
    if (i + 8 <= n) {
      uint64_t chunk;
      std::memcpy(&chunk, p + i, 8);
      if ((chunk & 0x8080808080808080ULL) == 0) {
        i += 8;
        continue;
      }
    }
    unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07;
    } else {
      if (bad_offset) *bad_offset = i;
      return false;
    }
    if (i + len > n) {
      if (bad_offset) *bad_offset = i;
      return false;
    }
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) {
        if (bad_offset) *bad_offset = i;
        return false;
      }
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      if (bad_offset) *bad_offset = i;
      return false;
    }
    i += len;
  }
  return true;
}

bool LooksLikeJson(std::string_view s) {
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{' || c == '[';
  }
  return false;
}

ParsedProblem CheckParsed(const nlohmann::json& v, int max_depth, size_t max_bytes,
                          std::string* detail) {
  std::vector<std::pair<const nlohmann::json*, int>> stack{{&v, 0}};
  size_t bytes = 0;
  auto too_large = [&] {
    if (detail) *detail = "output is larger than " + std::to_string(max_bytes) + " bytes";
    return ParsedProblem::kTooLarge;
  };
  auto bad_string = [&](const std::string& s) {
    if (IsValidUtf8(s)) return false;
    if (detail) *detail = "a string is not valid UTF-8";
    return true;
  };
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (node->is_object() || node->is_array()) {
      if (depth + 1 > max_depth) {
        if (detail) *detail = "output nests deeper than " + std::to_string(max_depth) + " levels";
        return ParsedProblem::kTooDeep;
      }
      bytes += 2;
    }
    if (node->is_object()) {
      for (const auto& [key, child] : node->get_ref<const nlohmann::json::object_t&>()) {
        if (bad_string(key)) return ParsedProblem::kInvalidUtf8;
        bytes += key.size() + 4;
        stack.emplace_back(&child, depth + 1);
      }
    } else if (node->is_array()) {
      for (const auto& child : node->get_ref<const nlohmann::json::array_t&>()) {
        bytes += 1;
        stack.emplace_back(&child, depth + 1);
      }
    } else if (node->is_string()) {
      const auto& s = node->get_ref<const std::string&>();
      if (bad_string(s)) return ParsedProblem::kInvalidUtf8;
      bytes += s.size() + 2;
    } else {
      bytes += 4;
    }
    if (bytes > max_bytes) return too_large();
  }
  return ParsedProblem::kNone;
}

}  // namespace taskledger::extract_internal
