// Key segments: how an id (an order number, a user id, a payment method id)
// becomes one segment of a dotted ledger key ("order.<id>.status") so that no
// id can be confused with the key's structure.
//
// The escaping is percent-encoding of exactly five bytes: `%` (the escape
// itself), `.` (the segment separator), `{` and `}` (placeholders in key
// templates and record patterns) and `*` (the wildcard of paths and globs),
// written `%25`, `%2E`, `%7B`, `%7D`, `%2A`. Every other byte, spaces and UTF-8
// included, is kept as it is, so the key of an id without those five bytes is
// byte-identical to what 0.1 wrote (ids such as "#W123", "mia_li_3668",
// "credit_card_1" are unchanged). Unescaping reads `%XX` (hex, either case)
// back; a `%` not followed by two hex digits is kept literally, so keys written
// before escaping existed still read back as the text they hold.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace taskledger {

// True if `c` is one of the five escaped bytes.
inline bool KeySegmentNeedsEscape(char c) {
  return c == '%' || c == '.' || c == '{' || c == '}' || c == '*';
}

// Appends `id` escaped to `out`.
void AppendKeySegment(std::string_view id, std::string& out);
// Escapes the bytes of `s` from `from` on, in place.
void EscapeKeySegmentTail(std::string& s, size_t from);
std::string EscapeKeySegment(std::string_view id);
// Appends the unescaped text of `segment` to `out`.
void AppendUnescapedKeySegment(std::string_view segment, std::string& out);
std::string UnescapeKeySegment(std::string_view segment);

}  // namespace taskledger
