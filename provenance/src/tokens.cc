// Tokenize and ContainsWord. Tokenize walks the text once: at each word start
// it tries, in order, an account number, a URL or e-mail address (over the
// whitespace-delimited span), then a money amount or a number; whatever
// matched is skipped, so no byte is reported twice.
#include "taskledger/provenance/tokens.h"

#include <array>

#include "internal/leaf_text.h"
#include "taskledger/provenance/normalize.h"

namespace taskledger::provenance {
namespace {

// ASCII classes, inline: what the C library's functions answer in the "C"
// locale (and in UTF-8 locales for single bytes), without a call per byte.
constexpr bool Digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool Upper(char c) { return c >= 'A' && c <= 'Z'; }
constexpr bool Alpha(char c) { return Upper(c) || (c >= 'a' && c <= 'z'); }
constexpr bool Alnum(char c) { return Alpha(c) || Digit(c); }
constexpr bool Space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
constexpr char Lower(char c) { return Upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }
bool WordByte(char c) { return Alnum(c) || c == '_' || (static_cast<unsigned char>(c) >= 0x80); }

bool SpanEnd(char c) {
  return Space(c) || c == '"' || c == '\'' || c == '<' || c == '>' || c == '(' || c == ')' ||
         c == '[' || c == ']' || c == '{' || c == '}' || c == '|' || c == '\\' || c == '`' ||
         c == ',';
}

bool TrailingPunct(char c) {
  return c == '.' || c == ';' || c == ':' || c == '!' || c == '?' || c == '*';
}

bool StartsWithI(std::string_view s, std::string_view p) {
  if (s.size() < p.size()) return false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (Lower(s[i]) != p[i]) return false;
  }
  return true;
}

constexpr std::array<std::string_view, 16> kTlds = {"com", "org", "net", "io",   "dev", "ai",
                                                    "co",  "uk",  "de",  "info", "biz", "app",
                                                    "edu", "gov", "me",  "xyz"};

// host = labels of [alnum-] joined by '.', last label letters only.
bool IsHost(std::string_view h, bool need_known_tld) {
  if (h.empty() || h.front() == '.' || h.back() == '.') return false;
  std::size_t dots = 0;
  for (char c : h) {
    if (c == '.') {
      ++dots;
    } else if (!Alnum(c) && c != '-') {
      return false;
    }
  }
  if (dots == 0) return false;
  const auto tld = h.substr(h.rfind('.') + 1);
  if (tld.size() < 2) return false;
  for (char c : tld) {
    if (!Alpha(c)) return false;
  }
  if (!need_known_tld) return true;
  for (auto t : kTlds) {
    if (tld.size() == t.size() && StartsWithI(tld, t)) return true;
  }
  return false;
}

bool IsEmail(std::string_view s) {
  const auto at = s.find('@');
  if (at == 0 || at == std::string_view::npos || s.find('@', at + 1) != std::string_view::npos) {
    return false;
  }
  for (char c : s.substr(0, at)) {
    if (!Alnum(c) && c != '.' && c != '_' && c != '%' && c != '+' && c != '-') return false;
  }
  return IsHost(s.substr(at + 1), false);
}

// An account starting at i: returns its length or 0.
std::size_t MatchAccount(std::string_view t, std::size_t i) {
  std::size_t j = i;
  std::size_t alnum = 0;
  std::size_t digits = 0;
  const bool iban =
      i + 4 <= t.size() && Alpha(t[i]) && Alpha(t[i + 1]) && Digit(t[i + 2]) && Digit(t[i + 3]);
  if (!iban && (i >= t.size() || !Digit(t[i]))) return 0;
  std::size_t end = i;
  while (j < t.size()) {
    const std::size_t group_start = j;
    std::size_t group_digits = 0;
    while (j < t.size() && (iban ? Alnum(t[j]) : Digit(t[j]))) {
      if (Digit(t[j])) ++group_digits;
      ++j;
    }
    const std::size_t len = j - group_start;
    if (len == 0) break;
    if (group_start != i) {
      // A later group must look like part of a number, not the next word.
      bool ok = iban ? len <= 4 : len >= 3;
      for (std::size_t k = group_start; ok && k < j; ++k) {
        if (Alpha(t[k]) && !Upper(t[k])) ok = false;
      }
      if (!ok) {
        j = group_start;
        break;
      }
    }
    end = j;
    alnum += len;
    digits += group_digits;
    if (j + 1 < t.size() && (t[j] == ' ' || (!iban && t[j] == '-')) && Alnum(t[j + 1])) {
      ++j;
      continue;
    }
    break;
  }
  if (end < t.size() && WordByte(t[end])) return 0;
  if (iban) {
    if (alnum < 14 || alnum > 34 || digits < 8) return 0;
  } else if (digits < 8 || end == i) {
    return 0;
  } else {
    // A plain digit run of 8+ without separators is a number unless long.
    bool separated = false;
    for (std::size_t k = i; k < end; ++k) separated = separated || !Digit(t[k]);
    if (!separated && digits < 10) return 0;
  }
  return end - i;
}

std::size_t MatchNumber(std::string_view t, std::size_t i) {
  std::size_t j = i;
  while (j < t.size() && Digit(t[j])) ++j;
  if (j == i) return 0;
  while (j + 1 < t.size() && (t[j] == '.' || t[j] == ',') && Digit(t[j + 1])) {
    ++j;
    while (j < t.size() && Digit(t[j])) ++j;
  }
  return j - i;
}

bool CurrencySign(std::string_view t, std::size_t i, std::size_t& len) {
  for (std::string_view s : {"$", "\xE2\x82\xAC", "\xC2\xA3", "\xC2\xA5"}) {  // $ € £ ¥
    if (t.substr(i, s.size()) == s) {
      len = s.size();
      return true;
    }
  }
  return false;
}

bool CurrencyCodeAt(std::string_view t, std::size_t i) {
  for (std::string_view c : {"usd", "eur", "gbp", "chf", "jpy"}) {
    if (StartsWithI(t.substr(i), c) && (i + 3 >= t.size() || !WordByte(t[i + 3]))) return true;
  }
  return false;
}

}  // namespace

std::string_view TokenKindName(TokenKind kind) {
  switch (kind) {
    case TokenKind::kUrl:
      return "url";
    case TokenKind::kEmail:
      return "email";
    case TokenKind::kAccount:
      return "account";
    case TokenKind::kNumber:
      return "number";
    case TokenKind::kMoney:
      return "money";
  }
  return "number";
}

std::optional<TokenKind> ParseTokenKind(std::string_view name) {
  for (TokenKind k : {TokenKind::kUrl, TokenKind::kEmail, TokenKind::kAccount, TokenKind::kNumber,
                      TokenKind::kMoney}) {
    if (TokenKindName(k) == name) return k;
  }
  return std::nullopt;
}

namespace detail {

void TokenSpans(std::string_view t, TokenKinds kinds, std::vector<TokenSpan>& out) {
  out.clear();
  auto emit = [&](TokenKind k, std::size_t at, std::size_t len) {
    if ((kinds & KindBit(k)) != 0) out.push_back(TokenSpan{k, at, len});
  };
  std::size_t i = 0;
  while (i < t.size()) {
    if (i > 0 && WordByte(t[i - 1]) && WordByte(t[i])) {
      ++i;
      continue;
    }
    if (const std::size_t n = MatchAccount(t, i); n > 0) {
      emit(TokenKind::kAccount, i, n);
      i += n;
      continue;
    }
    // The whitespace-delimited span from here, without trailing punctuation.
    std::size_t j = i;
    while (j < t.size() && !SpanEnd(t[j])) ++j;
    std::size_t e = j;
    while (e > i && TrailingPunct(t[e - 1])) --e;
    const std::string_view span = t.substr(i, e - i);
    if (!span.empty() && Alnum(span.front())) {
      const auto slash = span.find('/');
      const auto host = span.substr(0, slash);
      if (StartsWithI(span, "http://") || StartsWithI(span, "https://") ||
          (StartsWithI(span, "www.") && span.size() > 4)) {
        emit(TokenKind::kUrl, i, span.size());
        i = j;
        continue;
      }
      if (IsEmail(span)) {
        emit(TokenKind::kEmail, i, span.size());
        i = j;
        continue;
      }
      if (IsHost(host, slash == std::string_view::npos)) {
        emit(TokenKind::kUrl, i, span.size());
        i = j;
        continue;
      }
    }
    std::size_t sign = 0;
    if (CurrencySign(t, i, sign)) {
      if (const std::size_t n = MatchNumber(t, i + sign); n > 0) {
        emit(TokenKind::kMoney, i, sign + n);
        i += sign + n;
        continue;
      }
    }
    if (const std::size_t n = MatchNumber(t, i); n > 0) {
      std::size_t k = i + n;
      if (k < t.size() && WordByte(t[k])) {  // "12abc": not a number
        i = k;
        continue;
      }
      if (k + 1 < t.size() && t[k] == ' ' && CurrencyCodeAt(t, k + 1)) {
        emit(TokenKind::kMoney, i, n + 4);
        i = k + 4;
        continue;
      }
      emit(TokenKind::kNumber, i, n);
      i = k;
      continue;
    }
    ++i;
  }
}

std::size_t TokenStartBound(std::string_view t) {
  // TokenSpans matches only where it does not stand inside a word, and every
  // match starts with a letter or digit (account, URL, e-mail, number), a
  // multi-byte currency sign (0xC2: £ ¥, 0xE2: €; word bytes, so also not
  // inside a word) or '$'. A "$12" token is counted at its first digit: '$' is
  // not a word byte, so that digit is always a place counted here, and no
  // other token starts there.
  std::size_t n = 0;
  bool after_word = false;
  for (const char c : t) {
    const auto b = static_cast<unsigned char>(c);
    if (!after_word && (Alnum(c) || b == 0xC2 || b == 0xE2)) ++n;
    after_word = WordByte(c);
  }
  return n;
}

}  // namespace detail

std::vector<Token> Tokenize(std::string_view t, TokenKinds kinds) {
  std::vector<detail::TokenSpan> spans;
  detail::TokenSpans(t, kinds, spans);
  std::vector<Token> out;
  out.reserve(spans.size());
  for (const auto& s : spans)
    out.push_back(Token{s.kind, std::string(t.substr(s.offset, s.length)), s.offset});
  return out;
}

bool ContainsWord(std::string_view text, std::string_view word) {
  return ContainsNormalizedWord(NormalizeText(text), NormalizeText(word));
}

bool ContainsNormalizedWord(std::string_view t, std::string_view w) {
  if (w.empty()) return false;
  for (std::size_t at = t.find(w); at != std::string_view::npos; at = t.find(w, at + 1)) {
    const bool left = at == 0 || !WordByte(t[at - 1]) || !WordByte(w.front());
    const std::size_t end = at + w.size();
    const bool right = end == t.size() || !WordByte(t[end]) || !WordByte(w.back());
    if (left && right) return true;
  }
  return false;
}

}  // namespace taskledger::provenance
