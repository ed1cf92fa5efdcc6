// Escaping of untrusted keys and values for the state block (see
// internal/value_text.h for the scheme and why it is safe).
#include "internal/value_text.h"

#include <cstdint>
#include <cstdio>

namespace taskledger::render_internal {
namespace {

constexpr uint32_t kInvalid = 0xFFFFFFFF;

// Decodes the code point at s[i] and advances i; kInvalid (advancing one byte)
// for malformed, overlong or surrogate sequences.
uint32_t NextCodePoint(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  size_t len = 0;
  uint32_t cp = 0, min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    ++i;
    return kInvalid;
  }
  if (i + len > s.size()) {
    ++i;
    return kInvalid;
  }
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      ++i;
      return kInvalid;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++i;
    return kInvalid;
  }
  i += len;
  return cp;
}

// Code points that can break a line, hide or reorder text, or open markup.
bool IsRisky(uint32_t cp) {
  return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) ||  // C0, DEL, C1 (U+0085)
         cp == '<' || cp == '>' || cp == '&' || cp == '`' ||
         (cp >= 0x200B && cp <= 0x200F) ||  // zero-width, LRM, RLM
         (cp >= 0x2028 && cp <= 0x202E) ||  // line/paragraph separators, bidi embeddings
         (cp >= 0x2060 && cp <= 0x2069) ||  // word joiner, invisible operators, bidi isolates
         cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB);
}

bool IsBareAscii(char c, bool first) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  if (c == '#') return !first;  // a leading '#' reads as a heading
  static constexpr std::string_view kAllowed = " _.,:;@/+-()'!?%=~$";
  return kAllowed.find(c) != std::string_view::npos;
}

void AppendUnicodeEscape(std::string& out, uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
  out += buf;
}

}  // namespace

std::string SafeJson(const nlohmann::json& v) {
  const std::string dumped = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(dumped.size());
  // Every risky code point can only occur inside a JSON string of `dumped`
  // (JSON's own syntax is printable ASCII), where a \u escape is valid.
  for (size_t i = 0; i < dumped.size();) {
    const size_t start = i;
    const uint32_t cp = NextCodePoint(dumped, i);
    if (cp == kInvalid) {
      AppendUnicodeEscape(out, 0xFFFD);
    } else if (IsRisky(cp) && cp >= 0x20) {  // C0 controls are already \-escaped by dump
      AppendUnicodeEscape(out, cp);
    } else {
      out.append(dumped, start, i - start);
    }
  }
  return out;
}

bool IsBareString(std::string_view s) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ') return false;
  for (size_t i = 0; i < s.size();) {
    const bool first = i == 0;
    const uint32_t cp = NextCodePoint(s, i);
    if (cp == kInvalid) return false;
    if (cp < 0x80) {
      if (!IsBareAscii(static_cast<char>(cp), first)) return false;
    } else if (IsRisky(cp)) {
      return false;
    }
  }
  // "5", "true", "null" written bare would read as a number, boolean or null.
  return !nlohmann::json::accept(s);
}

std::string ValueText(const nlohmann::json& v) {
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (IsBareString(s)) return s;
  }
  return SafeJson(v);
}

std::string KeyText(std::string_view key) {
  bool bare = !key.empty();
  for (size_t i = 0; bare && i < key.size(); ++i) {
    const char c = key[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    bare = alnum || c == '_' || (i > 0 && (c == '.' || c == '-'));
  }
  return bare ? std::string(key) : QuotedText(key);
}

std::string QuotedText(std::string_view s) { return SafeJson(nlohmann::json(std::string(s))); }

std::string XmlEscape(std::string_view s, bool attribute) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += attribute ? "&quot;" : "\"";
        break;
      case '\'':
        out += attribute ? "&apos;" : "'";
        break;
      default:
        out += c;
    }
  }
  return out;
}

size_t CountChars(std::string_view utf8) {
  size_t n = 0;
  for (char c : utf8) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

}  // namespace taskledger::render_internal
