// Intent binding (designation.h): which records of a tool's output the user's
// request points to, and whether a value sits in one. Every lookup goes to the
// index (a hash probe per value); only the designated records' short texts and
// the request texts are scanned, in C++, linear in their length.
#include "taskledger/provenance/designation.h"

#include <algorithm>
#include <array>
#include <string>
#include <unordered_set>

#include "taskledger/provenance/normalize.h"
#include "taskledger/provenance/tokens.h"

namespace taskledger::provenance {
namespace {

// Words too common to point at a passage.
constexpr std::array<std::string_view, 36> kStopWords = {
    "this",  "that",  "with",   "from",  "have", "what", "they",  "them",  "their",
    "there", "about", "which",  "where", "when", "will", "would", "your",  "you",
    "can",   "could", "please", "into",  "than", "then", "also",  "been",  "some",
    "such",  "only",  "just",   "very",  "more", "most", "other", "after", "before"};

bool IsStop(std::string_view w) {
  return std::find(kStopWords.begin(), kStopWords.end(), w) != kStopWords.end();
}

bool IsAsciiAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string LowerAscii(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), Lower);
  return out;
}

// The request texts, through NormalizeText, for word-boundary search.
class Request {
 public:
  Request(const ProvenanceIndex& index, const DesignationSpec& spec) {
    for (const auto& m : index.user_messages()) {
      raw_.push_back(m.text);
      normalized_.push_back(m.normalized);
    }
    for (const std::string& t : spec.request) {
      raw_.push_back(t);
      normalized_.push_back(NormalizeText(t));
    }
  }
  // True when some request text holds `word` as a word.
  bool Names(std::string_view word) const {
    if (word.empty()) return false;
    const std::string w = NormalizeText(word);
    if (w.empty()) return false;
    return std::any_of(normalized_.begin(), normalized_.end(),
                       [&](const std::string& t) { return ContainsNormalizedWord(t, w); });
  }
  const std::vector<std::string>& raw() const { return raw_; }

 private:
  std::vector<std::string> raw_;
  std::vector<std::string> normalized_;
};

// A string field of a record, or nullptr.
const std::string* StringField(const Record& r, const std::string& field) {
  if (field.empty()) return nullptr;
  const nlohmann::json& fields = r.fields();
  auto it = fields.find(field);
  if (it == fields.end() || !it->is_string()) return nullptr;
  return &it->get_ref<const std::string&>();
}

std::string ScalarText(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// True when `text` holds the value: a token of it normalises to `want`, or
// the value is a word of it.
bool Holds(std::string_view text, std::string_view value, const std::string& want) {
  for (const Token& t : Tokenize(text, kAllTokenKinds)) {
    if (NormalizeValue(t.text) == want) return true;
  }
  return ContainsWord(text, value);
}

bool SentenceMatches(const Request& request, std::string_view sentence) {
  size_t i = 0;
  while (i < sentence.size()) {
    if (!IsAsciiAlpha(sentence[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < sentence.size() && IsAsciiAlpha(sentence[j])) ++j;
    const std::string w = LowerAscii(sentence.substr(i, j - i));
    if (w.size() >= 4 && !IsStop(w) && request.Names(w)) return true;
    i = j;
  }
  return false;
}

bool WordChar(char c) { return IsAsciiAlpha(c) || IsAsciiDigit(c) || c == '_' || c == '-'; }

std::vector<std::string_view> Words(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    if (!WordChar(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && WordChar(text[j])) ++j;
    out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

bool AuthorBefore(std::string_view w) { return w == "from" || w == "by"; }
bool AuthorAfter(std::string_view w) {
  return w == "posted" || w == "wrote" || w == "sent" || w == "said" || w == "shared" ||
         w == "mentioned" || w == "asked";
}

bool Candidate(const Source& s, const DesignationSpec& spec) {
  return s.kind == SourceKind::kTool && s.record != nullptr &&
         std::find(spec.tools.begin(), spec.tools.end(), s.tool) != spec.tools.end();
}

std::string Where(const Source& s) {
  return std::string(s.tool) + "(" + std::string(s.call_id) + ") at " +
         PointerToPath(s.record->pointer);
}

// Rule 1's records: those whose author field equals a word the request names
// as an author, one source inside each (for its tool and call id).
Status AuthoredRecords(const ProvenanceIndex& index, const DesignationSpec& spec,
                       const Request& request, std::vector<const Source*>& out) {
  if (spec.author_field.empty()) return Status::Ok();
  std::unordered_set<const Record*> seen;
  for (const std::string& text : request.raw()) {
    const std::vector<std::string_view> words = Words(text);
    for (size_t i = 0; i < words.size(); ++i) {
      const std::string_view word = words[i];
      if (word.size() < 2 || word[0] < 'A' || word[0] > 'Z') continue;
      const std::string before = i > 0 ? LowerAscii(words[i - 1]) : "";
      const std::string after = i + 1 < words.size() ? LowerAscii(words[i + 1]) : "";
      if (!AuthorBefore(before) && !AuthorAfter(after)) continue;
      auto sources = index.SourcesOf(word);
      if (!sources) return sources.error();
      const std::string want = NormalizeValue(word);
      for (const Source* s : sources.value()) {
        if (!Candidate(*s, spec) || s->token) continue;
        const nlohmann::json& fields = s->record->fields();
        auto it = fields.find(spec.author_field);
        if (it == fields.end() || it->is_null()) continue;
        if (NormalizeValue(ScalarText(*it)) != want) continue;
        if (seen.insert(s->record.get()).second) out.push_back(s);
      }
    }
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string_view> Sentences(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  size_t i = 0;
  while (i + 1 < text.size()) {
    const char c = text[i];
    if ((c == '.' || c == '!' || c == '?') && IsSpace(text[i + 1])) {
      parts.push_back(text.substr(start, i + 1 - start));
      start = i + 1;
      i += 2;  // the white space belongs to the next sentence; search after it
      continue;
    }
    ++i;
  }
  parts.push_back(text.substr(start));
  std::vector<std::string_view> out;
  for (std::string_view p : parts) {
    size_t b = 0;
    while (b <= p.size()) {
      size_t e = p.find('\n', b);
      if (e == std::string_view::npos) e = p.size();
      if (e > b) out.push_back(p.substr(b, e - b));
      b = e + 1;
    }
  }
  return out;
}

Result<Designation> Designate(const ProvenanceIndex& index, const DesignationSpec& spec,
                              std::string_view value) {
  if (spec.tools.empty()) {
    return Status::InvalidArgument("designation: the spec names no tool whose records count");
  }
  if (spec.text_field.empty()) {
    return Status::InvalidArgument("designation: the spec names no text field");
  }
  if (!index.health().ok()) return index.health();
  const Request request(index, spec);
  const std::string want = NormalizeValue(value);

  std::vector<const Source*> authored;
  if (Status s = AuthoredRecords(index, spec, request, authored); !s.ok()) return s;
  if (!authored.empty()) {
    for (const Source* s : authored) {
      const std::string* text = StringField(*s->record, spec.text_field);
      if (text != nullptr && Holds(*text, value, want)) {
        return Designation{true, Where(*s), "author"};
      }
    }
    return Designation{};
  }

  auto sources = index.SourcesOf(value);
  if (!sources) return sources.error();
  for (const Source* s : sources.value()) {
    if (!Candidate(*s, spec)) continue;
    const std::string* text = StringField(*s->record, spec.text_field);
    if (text == nullptr) continue;
    bool matched_any = false;
    for (std::string_view sentence : Sentences(*text)) {
      if (!SentenceMatches(request, sentence)) continue;
      matched_any = true;
      if (Holds(sentence, value, want)) return Designation{true, Where(*s), "sentence"};
    }
    if (matched_any) continue;
    const std::string* place = StringField(*s->record, spec.place_field);
    if (place != nullptr && request.Names(*place)) return Designation{true, Where(*s), "place"};
  }
  return Designation{};
}

}  // namespace taskledger::provenance
