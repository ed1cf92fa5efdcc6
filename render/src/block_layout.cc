// Plain, Markdown, XML and JSON layouts of the state block. All untrusted text
// passes through value_text.h before it is placed; the layouts add only
// fixed structure around it.
#include "internal/block_layout.h"

#include <string>

#include "internal/value_text.h"

namespace taskledger::render_internal {
namespace {

constexpr std::string_view kPlainHeadings[kCategoryCount] = {"Facts", "Identifiers", "Constraints",
                                                             "Conditions"};
constexpr std::string_view kPluralNames[kCategoryCount] = {"facts", "identifiers", "constraints",
                                                           "conditions"};

// "[turn 3, tool "get_order#c1", verified, rule "r1"]". The source id and rule
// id are always quoted: bare, they could contain ", verified" and forge the
// bracket's contents.
std::string ProvenanceBracket(const Provenance& p) {
  std::string out =
      "[turn " + std::to_string(p.turn) + ", " + std::string(SourceKindName(p.source));
  if (!p.source_id.empty()) out += " " + QuotedText(p.source_id);
  out += p.verified ? ", verified" : ", claimed";
  if (!p.rule_id.empty()) out += ", rule " + QuotedText(p.rule_id);
  return out + "]";
}

std::string ProvenanceAttributes(const Provenance& p) {
  std::string out = " turn=\"" + std::to_string(p.turn) + "\" source=\"" +
                    std::string(SourceKindName(p.source)) + "\"";
  if (!p.source_id.empty()) {
    out += " source_id=\"" + XmlEscape(ValueText(nlohmann::json(p.source_id)), true) + "\"";
  }
  out += p.verified ? " verified=\"true\"" : " verified=\"false\"";
  if (!p.rule_id.empty())
    out += " rule=\"" + XmlEscape(ValueText(nlohmann::json(p.rule_id)), true) + "\"";
  return out;
}

std::string ProvenanceObject(const nlohmann::json& value, const Provenance& p) {
  std::string out = "{\"value\":" + SafeJson(value) + ",\"turn\":" + std::to_string(p.turn) +
                    ",\"source\":\"" + std::string(SourceKindName(p.source)) + "\"";
  if (!p.source_id.empty()) out += ",\"source_id\":" + QuotedText(p.source_id);
  out += p.verified ? ",\"verified\":true" : ",\"verified\":false";
  if (!p.rule_id.empty()) out += ",\"rule\":" + QuotedText(p.rule_id);
  return out + "}";
}

// "(12 older facts omitted)", "(1 older fact omitted)".
std::string OmissionNote(int category, size_t count) {
  std::string noun(kPluralNames[category]);
  if (count == 1) noun.pop_back();
  return "(" + std::to_string(count) + " older " + noun + " omitted)";
}

bool HasSection(const SectionPieces& s) { return !s.entries.empty() || s.omitted > 0; }

void AppendLine(std::string& out, std::string_view line) {
  if (!out.empty()) out += '\n';
  out += line;
}

// Plain and Markdown differ only in their headings.
std::string AssembleLines(bool markdown, uint64_t version, bool include_provenance,
                          const BlockPieces& pieces) {
  std::string out = markdown ? "## Current Task State" : "Current Task State";
  if (include_provenance) out += " (version " + std::to_string(version) + ")";
  if (!markdown) out += ":";
  bool any = false;
  for (int c = 0; c < kCategoryCount; ++c) {
    const SectionPieces& s = pieces[c];
    if (!HasSection(s)) continue;
    any = true;
    AppendLine(out, markdown ? "### " + std::string(kPlainHeadings[c])
                             : std::string(kPlainHeadings[c]) + ":");
    // The note goes first: after a Markdown list it would be read as part of
    // the last item.
    if (s.omitted > 0) AppendLine(out, OmissionNote(c, s.omitted));
    for (const std::string& e : s.entries) AppendLine(out, e);
  }
  if (!any) AppendLine(out, "(no entries)");
  return out;
}

std::string AssembleXml(uint64_t version, const BlockPieces& pieces) {
  std::string out = "<task_state version=\"" + std::to_string(version) + "\">";
  for (int c = 0; c < kCategoryCount; ++c) {
    const SectionPieces& s = pieces[c];
    if (!HasSection(s)) continue;
    std::string open = "<" + std::string(kPluralNames[c]);
    if (s.omitted > 0) open += " omitted=\"" + std::to_string(s.omitted) + "\"";
    AppendLine(out, open + ">");
    for (const std::string& e : s.entries) AppendLine(out, e);
    AppendLine(out, "</" + std::string(kPluralNames[c]) + ">");
  }
  AppendLine(out, "</task_state>");
  return out;
}

std::string AssembleJson(uint64_t version, const BlockPieces& pieces) {
  std::string out = "{\"task_state\":{\"version\":" + std::to_string(version);
  std::string omitted;
  for (int c = 0; c < kCategoryCount; ++c) {
    const SectionPieces& s = pieces[c];
    if (!HasSection(s)) continue;
    out += ",\"" + std::string(kPluralNames[c]) + "\":{";
    for (size_t i = 0; i < s.entries.size(); ++i) {
      if (i > 0) out += ',';
      out += s.entries[i];
    }
    out += '}';
    if (s.omitted > 0) {
      omitted += omitted.empty() ? "" : ",";
      omitted += "\"" + std::string(kPluralNames[c]) + "\":" + std::to_string(s.omitted);
    }
  }
  if (!omitted.empty()) out += ",\"omitted\":{" + omitted + "}";
  return out + "}}";
}

}  // namespace

std::string EntryText(StateBlockFormat format, std::string_view key, const Entry& entry,
                      bool include_provenance) {
  const Provenance& p = entry.provenance;
  switch (format) {
    case StateBlockFormat::kPlain:
    case StateBlockFormat::kMarkdown: {
      const bool md = format == StateBlockFormat::kMarkdown;
      std::string line = md ? "- `" + KeyText(key) + "`: " : "- " + KeyText(key) + ": ";
      line += ValueText(entry.value);
      if (include_provenance) line += " " + ProvenanceBracket(p);
      return line;
    }
    case StateBlockFormat::kXml: {
      // The attribute's own quotes delimit the key: inside them, the key's
      // JSON string escapes (so no control or separator is written raw),
      // without JSON's quote marks.
      const std::string quoted = QuotedText(key);
      std::string open = "<entry key=\"" +
                         XmlEscape(std::string_view(quoted).substr(1, quoted.size() - 2), true) +
                         "\"";
      if (include_provenance) open += ProvenanceAttributes(p);
      return open + ">" + XmlEscape(ValueText(entry.value), false) + "</entry>";
    }
    case StateBlockFormat::kJson:
      return QuotedText(key) + ":" +
             (include_provenance ? ProvenanceObject(entry.value, p) : SafeJson(entry.value));
  }
  return {};
}

std::string AssembleBlock(StateBlockFormat format, uint64_t version, bool include_provenance,
                          const BlockPieces& pieces) {
  switch (format) {
    case StateBlockFormat::kPlain:
      return AssembleLines(false, version, include_provenance, pieces);
    case StateBlockFormat::kMarkdown:
      return AssembleLines(true, version, include_provenance, pieces);
    case StateBlockFormat::kXml:
      return AssembleXml(version, pieces);
    case StateBlockFormat::kJson:
      return AssembleJson(version, pieces);
  }
  return {};
}

}  // namespace taskledger::render_internal
