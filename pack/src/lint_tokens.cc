// The tokenizer of `pack lint`'s Lua source scans (see internal/lint_parts.h):
// best effort, never fails; what it cannot read becomes kPunct/kOther tokens.
#include <algorithm>
#include <cctype>
#include <optional>

#include "internal/lint_parts.h"

namespace taskledger::lint_internal {
namespace {

// Skips a long bracket [[...]] / [==[...]==] starting at s[i] == '['; returns
// the contents and moves i past it, or nullopt if s[i] opens none.
std::optional<std::string> LongBracket(std::string_view s, size_t& i) {
  size_t j = i + 1, level = 0;
  while (j < s.size() && s[j] == '=') ++j, ++level;
  if (j >= s.size() || s[j] != '[') return std::nullopt;
  const std::string close = "]" + std::string(level, '=') + "]";
  size_t end = s.find(close, j + 1);
  if (end == std::string_view::npos) end = s.size();
  std::string body(s.substr(j + 1, end - j - 1));
  i = std::min(s.size(), end + close.size());
  return body;
}

}  // namespace

std::vector<Token> Tokenize(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (s.substr(i, 2) == "--") {
      i += 2;
      if (i < s.size() && s[i] == '[' && LongBracket(s, i)) continue;
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      std::string text;
      for (++i; i < s.size() && s[i] != c && s[i] != '\n'; ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        text += s[i];
      }
      ++i;
      out.push_back({Token::kString, text});
    } else if (c == '[' && (i + 1 < s.size()) && (s[i + 1] == '[' || s[i + 1] == '=')) {
      size_t start = i;
      if (auto body = LongBracket(s, i)) {
        out.push_back({Token::kString, *body});
      } else {
        i = start + 1;
        out.push_back({Token::kPunct, "["});
      }
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::string name;
      while (i < s.size()) {
        if (ident(s[i])) {
          name += s[i++];
        } else if (s[i] == '.' && i + 1 < s.size() &&
                   std::isalpha(static_cast<unsigned char>(s[i + 1]))) {
          name += s[i++];
        } else {
          break;
        }
      }
      out.push_back({Token::kName, name});
    } else if (s.substr(i, 3) == "...") {
      i += 3;
      out.push_back({Token::kOther, "..."});
    } else if (s.substr(i, 2) == "..") {
      i += 2;
      out.push_back({Token::kConcat, ".."});
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < s.size() && (ident(s[i]) || s[i] == '.')) ++i;
      out.push_back({Token::kOther, "0"});
    } else {
      out.push_back({Token::kPunct, std::string(1, c)});
      ++i;
    }
  }
  return out;
}

}  // namespace taskledger::lint_internal
