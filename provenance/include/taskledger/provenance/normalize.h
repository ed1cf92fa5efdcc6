// Normalisation of values for provenance matching: the canonical form two
// spellings of the same value share, so a value an agent copied with changed
// case, extra whitespace, a dropped `https://`, a trailing slash, spaces
// inside an account number, full-width letters or zero-width characters still
// matches where it was seen. Pure functions, thread-safe, no ICU: the unicode
// handling covers the compatibility forms agents and attackers actually use
// (full-width ASCII, no-break and typographic spaces, common ligatures,
// zero-width and soft-hyphen characters); other code points pass unchanged,
// and so do bytes that are not valid UTF-8.
#pragma once

#include <string>
#include <string_view>

namespace taskledger::provenance {

// The canonical form of `value`:
//  1. compatibility forms folded (U+FF01..U+FF5E to ASCII, U+3000 and the
//     no-break/typographic spaces to a space, ﬀ ﬁ ﬂ ﬃ ﬄ to letters),
//     zero-width characters, U+2060, U+FEFF and U+00AD dropped;
//  2. ASCII and Latin-1 letters lower-cased;
//  3. whitespace trimmed and each run collapsed to one space;
//  4. a URL (a space-free value with a scheme, a `www.` prefix, or a dotted
//     host followed by `/`) loses `http://`/`https://`, `www.` and trailing
//     slashes;
//  5. an account number (groups of letters and digits split by single spaces
//     or hyphens, 8 to 40 characters without them, at least 6 digits, e.g.
//     "DE89 3704 0044 0532 0130 00") loses its separators.
// The same value always gives the same form; the empty string stays empty.
std::string NormalizeValue(std::string_view value);

// Steps 1-3 only: the form free text is searched in (word-boundary matching).
std::string NormalizeText(std::string_view text);

}  // namespace taskledger::provenance
