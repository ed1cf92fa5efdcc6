// Strict reader of the four state-block layouts (see block_reader.h). It is
// written from the layout rules in docs/render.md, not from the renderer's
// code, so that a renderer bug shows up as a read failure.
#include "block_reader.h"

#include <regex>

namespace taskledger::testing {
namespace {

constexpr const char* kSections[] = {"facts", "identifiers", "constraints", "conditions"};
constexpr const char* kHeadings[] = {"Facts", "Identifiers", "Constraints", "Conditions"};

// Length of the JSON value at the start of `s` ("...", [...], {...}), or 0.
ReadBlock Fail(std::string error) {
  ReadBlock block;
  block.error = std::move(error);
  return block;
}

size_t JsonTokenLength(std::string_view s) {
  if (s.empty()) return 0;
  bool in_string = false;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"') {
        in_string = false;
        if (depth == 0) return i + 1;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      if (--depth == 0) return i + 1;
    } else if (depth == 0) {
      return 0;
    }
  }
  return 0;
}

bool IsBareKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

// Value text: JSON when it parses as JSON, else a bare string.
nlohmann::json ValueFromText(std::string_view text) {
  if (nlohmann::json::accept(text)) return nlohmann::json::parse(text);
  return std::string(text);
}

const std::regex& ProvenanceBracket() {
  static const std::regex re(
      R"re(^ \[turn \d+, (tool|user|agent|operator)( "(?:[^"\\]|\\.)*")?, (verified|claimed)(, rule "(?:[^"\\]|\\.)*")?\]$)re");
  return re;
}

// "- key: value[ provenance]" or "- `key`: value[ provenance]".
bool ReadItem(std::string_view line, bool markdown, bool provenance, ReadEntry& out) {
  std::string_view rest = line.substr(markdown ? 3 : 2);
  if (!rest.empty() && rest[0] == '"') {
    const size_t n = JsonTokenLength(rest);
    if (n == 0) return false;
    out.key = nlohmann::json::parse(rest.substr(0, n)).get<std::string>();
    rest.remove_prefix(n);
  } else {
    size_t n = 0;
    while (n < rest.size() && IsBareKeyChar(rest[n])) ++n;
    if (n == 0) return false;
    out.key = std::string(rest.substr(0, n));
    rest.remove_prefix(n);
  }
  const std::string_view sep = markdown ? "`: " : ": ";
  if (rest.substr(0, sep.size()) != sep) return false;
  rest.remove_prefix(sep.size());
  size_t n = 0;
  if (!rest.empty() && (rest[0] == '"' || rest[0] == '[' || rest[0] == '{')) {
    n = JsonTokenLength(rest);
    if (n == 0) return false;
  } else {
    n = provenance ? rest.find(" [turn ") : rest.size();
    if (n == std::string_view::npos || n == 0) return false;
  }
  out.value = ValueFromText(rest.substr(0, n));
  rest.remove_prefix(n);
  if (provenance) {
    if (!std::regex_match(rest.begin(), rest.end(), ProvenanceBracket())) return false;
    out.provenance = std::string(rest.substr(1));
  } else if (!rest.empty()) {
    return false;
  }
  return true;
}

ReadBlock ReadLines(std::string_view text, bool markdown, bool provenance) {
  ReadBlock block;
  std::vector<std::string_view> lines;
  for (size_t start = 0;;) {
    const size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  const std::regex title(markdown ? R"re(^## Current Task State( \(version \d+\))?$)re"
                                  : R"re(^Current Task State( \(version \d+\))?:$)re");
  if (!std::regex_match(std::string(lines[0]), title))
    return Fail("bad title: " + std::string(lines[0]));
  int section = -1;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string line(lines[i]);
    int heading = -1;
    for (int c = 0; c < 4; ++c) {
      const std::string h =
          markdown ? std::string("### ") + kHeadings[c] : std::string(kHeadings[c]) + ":";
      if (line == h) heading = c;
    }
    std::smatch m;
    if (heading >= 0) {
      if (heading <= section) return Fail("section out of order or repeated: " + line);
      section = heading;
      block.sections.push_back(kSections[section]);
    } else if (line == "(no entries)" && i == 1 && lines.size() == 2) {
      // an empty state
    } else if (section >= 0 &&
               std::regex_match(line, m, std::regex(R"re(^\((\d+) older (\w+) omitted\)$)re"))) {
      std::string noun = kSections[section];
      if (m[1] == "1") noun.pop_back();
      if (m[2] != noun || block.omitted.count(kSections[section])) return Fail("bad note: " + line);
      block.omitted[kSections[section]] = std::stoul(m[1]);
    } else if (section >= 0 && line.rfind(markdown ? "- `" : "- ", 0) == 0) {
      ReadEntry e;
      e.section = kSections[section];
      if (!ReadItem(line, markdown, provenance, e)) return Fail("bad item: " + line);
      block.entries.push_back(std::move(e));
    } else {
      return Fail("unexpected line: " + line);
    }
  }
  return block;
}

std::string XmlUnescape(std::string_view s, bool& ok) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' || s[i] == '>') ok = false;
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    static const std::pair<std::string_view, char> kEntities[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    bool matched = false;
    for (auto [entity, c] : kEntities) {
      if (s.substr(i, entity.size()) == entity) {
        out += c;
        i += entity.size() - 1;
        matched = true;
        break;
      }
    }
    ok = ok && matched;
  }
  return out;
}

// Our XML has one tag per line, text only inside <entry>.
ReadBlock ReadXml(std::string_view text, bool provenance) {
  ReadBlock block;
  const std::regex open_root(R"re(^<task_state version="\d+">$)re");
  const std::regex open_section(R"re(^<(\w+)( omitted="(\d+)")?>$)re");
  const std::regex entry(
      provenance
          ? R"re(^<entry key="([^"<>]*)" turn="\d+" source="(tool|user|agent|operator)"( source_id="[^"<>]*")? verified="(true|false)"( rule="[^"<>]*")?>([^<>]*)</entry>$)re"
          : R"re(^<entry key="([^"<>]*)">([^<>]*)</entry>$)re");
  std::vector<std::string> lines;
  for (size_t start = 0;;) {
    const size_t end = text.find('\n', start);
    lines.emplace_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if (lines.size() < 2 || !std::regex_match(lines.front(), open_root) ||
      lines.back() != "</task_state>") {
    return Fail("bad root element");
  }
  int section = -1;
  bool in_section = false;
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    std::smatch m;
    const std::string& line = lines[i];
    if (!in_section && std::regex_match(line, m, open_section)) {
      int idx = -1;
      for (int c = 0; c < 4; ++c)
        if (m[1] == kSections[c]) idx = c;
      if (idx <= section) return Fail("bad section: " + line);
      section = idx;
      in_section = true;
      block.sections.push_back(kSections[idx]);
      if (m[3].matched) block.omitted[kSections[idx]] = std::stoul(m[3]);
    } else if (in_section && line == "</" + std::string(kSections[section]) + ">") {
      in_section = false;
    } else if (in_section && std::regex_match(line, m, entry)) {
      bool ok = true;
      const std::string key_text = XmlUnescape(m[1].str(), ok);
      const std::string value_text = XmlUnescape(m[provenance ? 6 : 2].str(), ok);
      if (!ok) return Fail("bad entity: " + line);
      ReadEntry e;
      e.section = kSections[section];
      e.key = !key_text.empty() && key_text[0] == '"'
                  ? nlohmann::json::parse(key_text).get<std::string>()
                  : key_text;
      e.value = ValueFromText(value_text);
      if (provenance) e.provenance = line.substr(0, line.find('>'));
      block.entries.push_back(std::move(e));
    } else {
      return Fail("unexpected line: " + line);
    }
  }
  if (in_section) return Fail("unclosed section");
  return block;
}

ReadBlock ReadJson(std::string_view text, bool provenance) {
  ReadBlock block;
  if (text.find('\n') != std::string_view::npos) return Fail("JSON block spans lines");
  if (!nlohmann::json::accept(text)) return Fail("not JSON");
  // Ordered, so that the section order is checked as written.
  const auto doc = nlohmann::ordered_json::parse(text);
  if (!doc.is_object() || doc.size() != 1 || !doc.contains("task_state")) return Fail("bad root");
  const auto& ts = doc["task_state"];
  for (const auto& [member, value] : ts.items()) {
    if (member == "version" && value.is_number_unsigned()) continue;
    if (member == "omitted" && value.is_object()) {
      for (const auto& [s, n] : value.items()) block.omitted[s] = n.get<size_t>();
      continue;
    }
    int idx = -1;
    for (int c = 0; c < 4; ++c)
      if (member == kSections[c]) idx = c;
    if (idx < 0 || !value.is_object()) return Fail("unexpected member: " + member);
    block.sections.push_back(member);
    for (const auto& [key, v] : value.items()) {
      ReadEntry e{member, key, nlohmann::json::parse(v.dump()), ""};
      if (provenance) {
        if (!v.is_object() || !v.contains("value") || !v.contains("turn") ||
            !v.contains("source") || !v.contains("verified")) {
          return Fail("bad provenance object for " + key);
        }
        e.value = nlohmann::json::parse(v["value"].dump());
        e.provenance = v.dump();
      }
      block.entries.push_back(std::move(e));
    }
  }
  return block;
}

}  // namespace

ReadBlock ReadStateBlock(StateBlockFormat format, std::string_view text, bool provenance) {
  if (std::string bad = FindLineBreakers(text); !bad.empty()) return Fail("raw " + bad);
  switch (format) {
    case StateBlockFormat::kPlain:
      return ReadLines(text, false, provenance);
    case StateBlockFormat::kMarkdown:
      return ReadLines(text, true, provenance);
    case StateBlockFormat::kXml:
      return ReadXml(text, provenance);
    case StateBlockFormat::kJson:
      return ReadJson(text, provenance);
  }
  return Fail("unknown format");
}

std::string FindLineBreakers(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if ((b < 0x20 && b != '\n') || b == 0x7F) return "control byte at " + std::to_string(i);
    if (b < 0x80) continue;
    const std::string_view rest = text.substr(i);
    for (std::string_view bad : {"\xC2\x85", "\xE2\x80\xA8", "\xE2\x80\xA9", "\xE2\x80\xAE",
                                 "\xE2\x81\xA6", "\xEF\xBB\xBF"}) {
      if (rest.substr(0, bad.size()) == bad)
        return "separator or bidi mark at " + std::to_string(i);
    }
    size_t len = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || i + len > text.size()) return "invalid UTF-8 at " + std::to_string(i);
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) {
        return "invalid UTF-8 at " + std::to_string(i);
      }
    }
    i += len - 1;
  }
  return "";
}

}  // namespace taskledger::testing
