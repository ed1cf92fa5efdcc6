// Native tokenisers for free text: the URLs, e-mail addresses, account
// numbers (IBAN-like or long digit groups), numbers and money amounts inside
// a message body or a web page, and word-boundary matching. They run in C++,
// linear in the text, so rules call them without spending the Lua pattern
// budget. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskledger::provenance {

enum class TokenKind : std::uint8_t {
  kUrl = 1,
  kEmail = 2,
  kAccount = 4,
  kNumber = 8,
  kMoney = 16
};

// A set of kinds, as a bit mask of TokenKind values.
using TokenKinds = std::uint8_t;
inline constexpr TokenKinds kAllTokenKinds = 31;

inline constexpr TokenKinds KindBit(TokenKind k) { return static_cast<TokenKinds>(k); }

// "url", "email", "account", "number", "money".
std::string_view TokenKindName(TokenKind kind);
// The kind named `name` (as above), or nullopt.
std::optional<TokenKind> ParseTokenKind(std::string_view name);

struct Token {
  TokenKind kind = TokenKind::kNumber;
  std::string text;        // as written (trailing sentence punctuation removed)
  std::size_t offset = 0;  // byte offset of `text` in the scanned string
};

// The tokens of the kinds in `kinds`, in order of offset. A URL is a run
// starting with `http://`, `https://` or `www.`, or a bare dotted host
// (letters in its last label) followed by `/`, or a bare host with a
// well-known top-level domain; it ends at whitespace, quotes or brackets.
// An e-mail address is local@domain.tld. An account is two letters, two
// digits and 10-30 letters/digits (an IBAN, spaces between groups of 4
// allowed) or 8+ digits in groups. A number is a digit run with optional
// `.`/`,` separators; a money amount is a number with a currency sign or
// code next to it (`$12.50`, `12.50 EUR`). A number that is part of an
// account, URL, e-mail or money token is not reported again as a number.
std::vector<Token> Tokenize(std::string_view text, TokenKinds kinds = kAllTokenKinds);

// True when `word` occurs in `text` with a word boundary on both sides
// (neither neighbour a letter, digit or `_`), after NormalizeText on both:
// "Eve" is found in "ask Eve." but not in "every". An empty word is never found.
bool ContainsWord(std::string_view text, std::string_view word);
// ContainsWord on text and word already through NormalizeText (no allocation).
bool ContainsNormalizedWord(std::string_view text, std::string_view word);

}  // namespace taskledger::provenance
