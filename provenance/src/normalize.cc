// NormalizeValue / NormalizeText: one pass folding compatibility forms, case
// and whitespace, then the URL and account-number shapes on the result. The
// pass is ASCII-fast: a byte below 0x80 never goes through the decoder.
#include "taskledger/provenance/normalize.h"

#include "internal/leaf_text.h"
#include "internal/utf8.h"

namespace taskledger::provenance {
namespace {

bool IsDropped(char32_t cp) {
  return (cp >= 0x200B && cp <= 0x200F) || cp == 0x2060 || cp == 0xFEFF || cp == 0x00AD ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

bool IsSpace(char32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\f' || cp == '\v' ||
         cp == 0x00A0 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000 || cp == 0x1680 || cp == 0x0085 || cp == 0x2028 || cp == 0x2029;
}

// Appends the folded form of one code point (not a space, not dropped).
void AppendFolded(std::string& out, char32_t cp) {
  if (cp >= 0xFF01 && cp <= 0xFF5E) cp -= 0xFEE0;  // full-width ASCII
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp >= 'A' && cp <= 'Z' ? cp - 'A' + 'a' : cp));
    return;
  }
  switch (cp) {
    case 0xFB00:
      out += "ff";
      return;
    case 0xFB01:
      out += "fi";
      return;
    case 0xFB02:
      out += "fl";
      return;
    case 0xFB03:
      out += "ffi";
      return;
    case 0xFB04:
      out += "ffl";
      return;
    case 0x2024:
      out += ".";
      return;  // one dot leader
    case 0xFF0E:
      out += ".";
      return;
    case 0x2010:
    case 0x2011:
      out += "-";
      return;  // hyphens
    default:
      break;
  }
  if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) cp += 0x20;  // Latin-1 capitals
  detail::AppendUtf8(out, cp);
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool LooksLikeUrl(std::string_view s) {
  if (s.empty() || s.find(' ') != std::string_view::npos) return false;
  if (StartsWith(s, "http://") || StartsWith(s, "https://") || StartsWith(s, "www.")) return true;
  const auto slash = s.find('/');
  if (slash == std::string_view::npos || slash == 0) return false;
  const auto host = s.substr(0, slash);
  const auto dot = host.rfind('.');
  return dot != std::string_view::npos && dot > 0 && dot + 2 <= host.size() &&
         host.find('@') == std::string_view::npos;
}

std::string_view StripUrl(std::string_view s) {
  if (StartsWith(s, "https://")) {
    s.remove_prefix(8);
  } else if (StartsWith(s, "http://")) {
    s.remove_prefix(7);
  }
  if (StartsWith(s, "www.")) s.remove_prefix(4);
  while (s.size() > 1 && s.back() == '/') s.remove_suffix(1);
  return s;
}

// "de89 3704 0044 0532 0130 00" -> "de89370400440532013000" in `out`; false
// (and `out` unspecified) for anything else.
bool AccountForm(std::string_view s, std::string& out) {
  out.clear();
  int digits = 0;
  bool separated = false;
  char prev = ' ';
  for (char c : s) {
    const bool digit = c >= '0' && c <= '9';
    if (c == ' ' || c == '-') {
      if (prev == ' ' || prev == '-') return false;  // leading or doubled separator
      separated = true;
    } else if (digit || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      if (digit) ++digits;
      out.push_back(c);
    } else {
      return false;
    }
    prev = c;
  }
  if (!separated || prev == ' ' || prev == '-') return false;
  return out.size() >= 8 && out.size() <= 40 && digits >= 6;
}

}  // namespace

namespace detail {

void NormalizeMarked(std::string_view text, const std::vector<TokenSpan>& spans, std::string& out,
                     std::vector<Slice>& slices) {
  out.clear();
  out.reserve(text.size());
  slices.assign(spans.size(), Slice{});
  // Marks are the spans' starts and ends in order (2k: start of span k,
  // 2k+1: its end); `mark` is the next one to place.
  const std::size_t marks = 2 * spans.size();
  std::size_t mark = 0;
  auto at = [&](std::size_t m) {
    return spans[m / 2].offset + (m % 2 == 0 ? 0 : spans[m / 2].length);
  };
  bool pending_space = false;
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    char32_t cp = b;
    std::size_t len = 1;
    bool valid = true;
    if (b >= 0x80) {
      const CodePoint d = DecodeAt(text, i);
      cp = d.cp;
      len = d.length;
      valid = d.valid;
    }
    const bool dropped = valid && IsDropped(cp);
    const bool space = valid && !dropped && IsSpace(cp);
    for (; mark < marks && at(mark) <= i; ++mark) {
      Slice& slice = slices[mark / 2];
      if (at(mark) < i) {
        slice.begin = kNoSlice;  // inside a character: cannot be cut out
      } else if (mark % 2 == 1) {
        slice.end = out.size();  // a space before `i` is not the span's
      } else if (dropped || space) {
        slice.begin = kNoSlice;  // the span's own normalisation would trim here
      } else {
        slice.begin = out.size() + (pending_space && !out.empty() ? 1 : 0);
      }
    }
    i += len;
    if (!valid) {
      if (pending_space && !out.empty()) out.push_back(' ');
      pending_space = false;
      out.push_back(static_cast<char>(b));
      continue;
    }
    if (dropped) continue;
    if (space) {
      pending_space = true;
      continue;
    }
    if (pending_space && !out.empty()) out.push_back(' ');
    pending_space = false;
    AppendFolded(out, cp);
  }
  for (; mark < marks; ++mark) {
    Slice& slice = slices[mark / 2];
    if (at(mark) > text.size() || mark % 2 == 0) {
      slice.begin = kNoSlice;
    } else {
      slice.end = out.size();
    }
  }
}

void ValueKey(std::string_view normalized, std::string& key) {
  if (LooksLikeUrl(normalized)) {
    key.assign(StripUrl(normalized));
  } else if (!AccountForm(normalized, key)) {
    key.assign(normalized);
  }
}

}  // namespace detail

std::string NormalizeText(std::string_view text) {
  std::string out;
  std::vector<detail::Slice> none;
  detail::NormalizeMarked(text, {}, out, none);
  return out;
}

std::string NormalizeValue(std::string_view value) {
  std::string text = NormalizeText(value);
  if (LooksLikeUrl(text)) return std::string(StripUrl(text));
  std::string account;
  if (AccountForm(text, account)) return account;
  return text;
}

}  // namespace taskledger::provenance
