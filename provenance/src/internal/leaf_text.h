// One string leaf's text, read once for the index: its tokens as spans (no
// copies) and its normalised form with the place of each token inside it, so
// a token's key is cut from the leaf's normalised text instead of normalising
// the token again. Every key is byte-identical to NormalizeValue of the same
// text (tests/provenance/leaf_text_test.cc holds this against the public
// functions). Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "taskledger/provenance/tokens.h"

namespace taskledger::provenance::detail {

struct TokenSpan {
  TokenKind kind = TokenKind::kNumber;
  std::size_t offset = 0;  // in the scanned text
  std::size_t length = 0;
};

// Tokenize's tokens as spans of `text`, appended to `out` (cleared first).
void TokenSpans(std::string_view text, TokenKinds kinds, std::vector<TokenSpan>& out);

// An upper bound of TokenSpans(text, any kinds).size() in one cheap pass: the
// places a token can start (an ASCII letter or digit, or the first byte of
// £ ¥ €, where the byte before is not a word byte). Each token owns a
// distinct such place (a "$12" its first digit).
std::size_t TokenStartBound(std::string_view text);

// Where NormalizeText(span) sits inside NormalizeText(text): [begin, end).
// begin == kNoSlice: the span does not start and end on a character the
// normalised text keeps apart; normalise the span itself.
struct Slice {
  std::size_t begin = 0;
  std::size_t end = 0;
};
inline constexpr std::size_t kNoSlice = static_cast<std::size_t>(-1);

// NormalizeText(text) into `out` (cleared first) and, for each of `spans`
// (in order of offset, not overlapping), its slice of `out` in `slices`.
void NormalizeMarked(std::string_view text, const std::vector<TokenSpan>& spans, std::string& out,
                     std::vector<Slice>& slices);

// NormalizeValue's last two steps (URL and account forms) on text already
// through NormalizeText: NormalizeValue(v) == ValueKey(NormalizeText(v)).
// `key` is overwritten; it must not view `normalized`'s storage.
void ValueKey(std::string_view normalized, std::string& key);

}  // namespace taskledger::provenance::detail
