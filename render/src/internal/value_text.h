// How untrusted keys and values become text inside a state block.
//
// The scheme: a value is written bare only when it is a string made of
// characters that cannot start or shape anything (no quotes, brackets, angle
// brackets, backticks, '*', '|', '\', controls, line or paragraph separators,
// bidirectional or zero-width marks) and that does not read as a JSON number,
// boolean or null. Everything else is written as one line of JSON text in
// which, besides JSON's own escapes, every character outside printable
// ASCII-and-letters that could break a line or fool a reader is \u-escaped,
// as are < > & and the backtick. So a rendered value never contains a line
// break, a tag, a code fence or an unbalanced quote, and it stays parseable
// JSON. Stateless functions; thread-safe.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace taskledger::render_internal {

// `v` as single-line JSON text with the extra escapes above. Invalid UTF-8 in
// strings is replaced by U+FFFD rather than failing.
std::string SafeJson(const nlohmann::json& v);

// True if `s` may be written bare (see above).
bool IsBareString(std::string_view s);

// The value as it appears in plain, Markdown and XML blocks: bare string or
// SafeJson.
std::string ValueText(const nlohmann::json& v);

// A key: bare if it is an identifier-like token ([A-Za-z0-9_][A-Za-z0-9_.-]*),
// else its SafeJson string.
std::string KeyText(std::string_view key);

// Always the SafeJson string form: for text whose bareness would be ambiguous
// (source ids inside the provenance brackets).
std::string QuotedText(std::string_view s);

// Escapes & < > for XML text, and also " ' for attribute values.
std::string XmlEscape(std::string_view s, bool attribute);

// Number of Unicode characters in valid UTF-8 text.
size_t CountChars(std::string_view utf8);

}  // namespace taskledger::render_internal
