// Escaping of ids into ledger key segments (see taskledger/base/key_segment.h).
#include "taskledger/base/key_segment.h"

namespace taskledger {
namespace {

constexpr char kHex[] = "0123456789ABCDEF";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

void AppendKeySegment(std::string_view id, std::string& out) {
  for (char c : id) {
    if (KeySegmentNeedsEscape(c)) {
      auto b = static_cast<unsigned char>(c);
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 0xF];
    } else {
      out += c;
    }
  }
}

void EscapeKeySegmentTail(std::string& s, size_t from) {
  size_t i = from;
  while (i < s.size() && !KeySegmentNeedsEscape(s[i])) ++i;
  if (i == s.size()) return;  // the common case: nothing to escape, no copy
  std::string tail = s.substr(i);
  s.resize(i);
  AppendKeySegment(tail, s);
}

std::string EscapeKeySegment(std::string_view id) {
  std::string out;
  out.reserve(id.size());
  AppendKeySegment(id, out);
  return out;
}

void AppendUnescapedKeySegment(std::string_view segment, std::string& out) {
  for (size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] == '%' && i + 2 < segment.size()) {
      int hi = HexValue(segment[i + 1]);
      int lo = HexValue(segment[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += segment[i];
  }
}

std::string UnescapeKeySegment(std::string_view segment) {
  std::string out;
  out.reserve(segment.size());
  AppendUnescapedKeySegment(segment, out);
  return out;
}

}  // namespace taskledger
