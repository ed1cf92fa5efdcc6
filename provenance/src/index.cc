// ProvenanceIndex: the walk that indexes an output's leaves and the tokens in
// its strings, the limits, and the lookups.
#include "taskledger/provenance/index.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "internal/flat_json.h"
#include "internal/leaf_text.h"
#include "internal/utf8.h"
#include "taskledger/provenance/normalize.h"

namespace taskledger::provenance {
namespace {

constexpr std::size_t kRecordFieldBytes = 256;

// Generations are unique across every index of the process, so a cache keyed
// by one never mistakes another index (even at the same address) for its own.
std::uint64_t NextGeneration() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

// Appends one JSON pointer segment, escaped.
void AppendEscapedSegment(std::string& out, std::string_view s) {
  for (char c : s) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
}

}  // namespace

std::uint64_t ProvenanceIndex::InstanceId::New() { return NextGeneration(); }

std::string CleanUtf8Prefix(std::string_view s, std::size_t max) {
  std::string out;
  out.reserve(std::min(s.size(), max));
  for (std::size_t i = 0; i < s.size();) {
    const detail::CodePoint d = detail::DecodeAt(s, i);
    const bool ok = d.valid && !(d.cp >= 0xD800 && d.cp <= 0xDFFF) && d.cp <= 0x10FFFF;
    const std::size_t len = ok ? d.length : 1;
    if (out.size() + len > max) break;
    if (ok) {
      out.append(s.substr(i, len));
    } else {
      out.push_back('?');
    }
    i += len;
  }
  return out;
}

std::string_view SourceKindName(SourceKind kind) {
  switch (kind) {
    case SourceKind::kUser:
      return "user";
    case SourceKind::kTool:
      return "tool";
    case SourceKind::kConstant:
      return "constant";
  }
  return "tool";
}

std::string PointerToPath(std::string_view pointer) {
  std::string out = "$";
  std::size_t at = 0;
  while (at < pointer.size()) {
    const auto next = pointer.find('/', at + 1);
    std::string seg(pointer.substr(at + 1, next == std::string_view::npos ? next : next - at - 1));
    std::string raw;
    for (std::size_t k = 0; k < seg.size(); ++k) {
      if (seg[k] == '~' && k + 1 < seg.size()) {
        raw.push_back(seg[k + 1] == '1' ? '/' : '~');
        ++k;
      } else {
        raw.push_back(seg[k]);
      }
    }
    const bool index = !raw.empty() && raw.find_first_not_of("0123456789") == std::string::npos;
    if (index) {
      out += "[" + raw + "]";
    } else if (!raw.empty() && raw.find_first_of(".[]\" ") == std::string::npos) {
      out += "." + raw;
    } else {
      out += "[" + nlohmann::json(raw).dump() + "]";
    }
    if (next == std::string_view::npos) break;
    at = next;
  }
  return out;
}

std::string Source::Describe() const {
  const char* trust = trusted ? "trusted" : "untrusted";
  switch (kind) {
    case SourceKind::kUser:
      return "the user's message (turn " + std::to_string(turn) + "), " + trust;
    case SourceKind::kConstant:
      return "the pack's constant " + std::string(tool) + ", " + trust;
    case SourceKind::kTool:
      break;
  }
  std::string out =
      std::string(tool) + "(" + std::string(call_id) + ") at " + PointerToPath(pointer);
  if (token) out += " (inside the text)";
  return out + ", " + trust;
}

nlohmann::json Source::ToJson() const {
  nlohmann::json j = {{"kind", SourceKindName(kind)}, {"turn", turn}, {"trusted", trusted}};
  if (kind == SourceKind::kTool) {
    j["tool"] = CleanUtf8Prefix(tool, tool.size());
    j["call_id"] = CleanUtf8Prefix(call_id, call_id.size());
    j["path"] = CleanUtf8Prefix(PointerToPath(pointer), 1000);
  } else if (kind == SourceKind::kConstant) {
    j["name"] = CleanUtf8Prefix(tool, tool.size());
  }
  if (token) j["token"] = true;
  if (record) {
    j["record"] = {{"path", CleanUtf8Prefix(PointerToPath(record->pointer), 1000)},
                   {"fields", record->fields()}};
  }
  return j;
}

const nlohmann::json& Record::fields() const {
  if (fields_) return *fields_;
  nlohmann::json out = nlohmann::json::object();
  if (object != nullptr && object->is_object()) {
    for (const auto& [k, child] : object->items()) {
      if (child.is_string()) {
        out[CleanUtf8Prefix(k, kRecordFieldBytes)] =
            CleanUtf8Prefix(child.get_ref<const std::string&>(), kRecordFieldBytes);
      } else if (child.is_primitive() && !child.is_null()) {
        out[CleanUtf8Prefix(k, kRecordFieldBytes)] = child;
      }
    }
  }
  return fields_.emplace(std::move(out));
}

ProvenanceIndex::ProvenanceIndex(TrustPolicy trust, IndexLimits limits)
    : trust_(std::move(trust)), limits_(limits), generation_(NextGeneration()) {}

Status ProvenanceIndex::Fail(Status error) const {
  if (health_.ok()) health_ = error;
  return error;
}

Status ProvenanceIndex::Add(std::string_view value, Source source) const {
  return AddKey(NormalizeValue(value), std::move(source));
}

Status ProvenanceIndex::AddKey(const std::string& key, Source source) const {
  if (key.empty()) return Status::Ok();
  if (sources_.size() >= limits_.max_sources || key_bytes_ + key.size() > limits_.max_key_bytes) {
    return Fail(Status::LimitExceeded("provenance index full (" + std::to_string(sources_.size()) +
                                      " sources, " + std::to_string(key_bytes_) +
                                      " bytes); calls that need provenance are denied"));
  }
  const auto id = static_cast<std::uint32_t>(sources_.size());
  sources_.push_back(std::move(source));
  auto [it, inserted] = by_value_.try_emplace(key);
  if (inserted) key_bytes_ += it->first.size();
  it->second.push_back(id);
  return Status::Ok();
}

// One output's walk: leaves, their tokens, and the records around them. Each
// string leaf is tokenised and normalised once (internal/leaf_text.h); its
// pointer is stored once in the output's `text`, which every source of the
// output views (set by Finish, when `text` no longer grows).
struct ProvenanceIndex::Walk {
  const ProvenanceIndex& index;
  std::int64_t turn;
  std::string_view tool;
  std::string_view call_id;
  std::shared_ptr<const nlohmann::json> output;  // what the records point into
  std::shared_ptr<std::string> text;             // tool, call id, then each leaf's pointer
  TrustPolicy::ToolTrust trust;                  // the pack's trust in this tool's fields
  std::size_t first = 0;                         // the output's first source
  // Per source from `first`: where its pointer sits in `text`.
  std::vector<std::pair<std::size_t, std::size_t>> spots{};
  std::string path{};  // the pointer of the node being walked
  std::size_t bytes = 0;
  // Scratch of Leaf, kept across leaves.
  std::vector<detail::TokenSpan> spans{};
  std::vector<detail::Slice> slices{};
  std::string normalized{};
  std::string key{};

  Status Push(const std::string& k, const Source& s, std::pair<std::size_t, std::size_t> spot) {
    const std::size_t before = index.sources_.size();
    Status st = index.AddKey(k, s);
    if (index.sources_.size() != before) spots.push_back(spot);
    return st;
  }

  // Points the output's sources into `text`, now complete.
  void Finish() {
    text->shrink_to_fit();
    const std::string_view all = *text;
    for (std::size_t k = first; k < index.sources_.size(); ++k) {
      Source& s = index.sources_[k];
      s.tool = all.substr(0, tool.size());
      s.call_id = all.substr(tool.size(), call_id.size());
      s.pointer = all.substr(spots[k - first].first, spots[k - first].second);
    }
  }

  Status Leaf(std::string_view value, const std::shared_ptr<const Record>& rec) {
    bytes += value.size();
    if (bytes > index.limits_.max_output_bytes) {
      return index.Fail(Status::LimitExceeded(
          std::string(tool) + "(" + std::string(call_id) + "): output over " +
          std::to_string(index.limits_.max_output_bytes) +
          " bytes of text, not indexed; calls that need provenance are denied"));
    }
    const std::pair<std::size_t, std::size_t> spot{text->size(), path.size()};
    text->append(path);
    // One source for the field (its trust looked up once), copied per token.
    Source field;
    field.kind = SourceKind::kTool;
    field.turn = turn;
    field.names = text;
    field.trusted = trust.Trusted(path);
    field.record = rec;
    detail::TokenSpans(value, kAllTokenKinds, spans);
    detail::NormalizeMarked(value, spans, normalized, slices);
    detail::ValueKey(normalized, key);
    if (Status s = Push(key, field, spot); !s.ok()) return s;
    if (spans.empty() || (spans.size() == 1 && spans[0].length == value.size())) {
      return Status::Ok();
    }
    field.token = true;
    const std::string_view norm = normalized;
    for (std::size_t k = 0; k < spans.size(); ++k) {
      const detail::TokenSpan& t = spans[k];
      if (t.length == value.size()) continue;  // the whole field, indexed above
      if (slices[k].begin == detail::kNoSlice) {
        key = NormalizeValue(value.substr(t.offset, t.length));
      } else {
        detail::ValueKey(norm.substr(slices[k].begin, slices[k].end - slices[k].begin), key);
      }
      if (Status s = Push(key, field, spot); !s.ok()) return s;
    }
    return Status::Ok();
  }

  Status Node(const nlohmann::json& v, const std::shared_ptr<const Record>& rec, int depth) {
    if ((v.is_object() || v.is_array()) && depth >= index.limits_.max_depth) {
      return index.Fail(Status::LimitExceeded(
          std::string(tool) + "(" + std::string(call_id) + "): output nests deeper than " +
          std::to_string(index.limits_.max_depth) +
          ", not indexed; calls that need provenance are denied"));
    }
    const std::size_t mark = path.size();
    if (v.is_object()) {
      auto own = std::make_shared<Record>();
      own->pointer = path;
      own->output = output;
      own->object = &v;
      std::shared_ptr<const Record> shared = std::move(own);
      for (const auto& [k, child] : v.items()) {
        path.push_back('/');
        AppendEscapedSegment(path, k);
        Status s = Node(child, shared, depth + 1);
        path.resize(mark);
        if (!s.ok()) return s;
      }
      return Status::Ok();
    }
    if (v.is_array()) {
      std::size_t i = 0;
      for (const auto& child : v) {
        path.push_back('/');
        path += std::to_string(i++);
        Status s = Node(child, rec, depth + 1);
        path.resize(mark);
        if (!s.ok()) return s;
      }
      return Status::Ok();
    }
    if (v.is_null()) return Status::Ok();
    if (v.is_string()) return Leaf(v.get_ref<const std::string&>(), rec);
    return Leaf(v.dump(), rec);
  }
};

Status ProvenanceIndex::IndexOutput(std::int64_t turn, std::string_view tool,
                                    std::string_view call_id,
                                    std::shared_ptr<const nlohmann::json> output) const {
  const nlohmann::json& root = *output;
  auto text = std::make_shared<std::string>();
  text->reserve(tool.size() + call_id.size() + 256);
  text->append(tool).append(call_id);
  Walk walk{
      *this,          turn, tool, call_id, std::move(output), std::move(text), trust_.ForTool(tool),
      sources_.size()};
  Status s = walk.Node(root, nullptr, 0);
  walk.Finish();
  return s;
}

Status ProvenanceIndex::IndexUserMessage(std::int64_t turn, std::string_view text) const {
  Source s;
  s.kind = SourceKind::kUser;
  s.turn = turn;
  s.trusted = trust_.user_trusted();
  if (Status st = Add(text, s); !st.ok()) return st;
  s.token = true;
  for (const Token& t : Tokenize(text)) {
    if (Status st = Add(t.text, s); !st.ok()) return st;
  }
  if (sources_.size() >= limits_.max_sources) {
    return Fail(
        Status::LimitExceeded("provenance index full; calls that need provenance are denied"));
  }
  UserMessage m{turn, std::string(text), NormalizeText(text),
                static_cast<std::uint32_t>(sources_.size())};
  sources_.push_back(s);
  user_messages_.push_back(std::move(m));
  return Status::Ok();
}

Status ProvenanceIndex::AddConstant(std::string_view name, std::string_view value) {
  if (!health_.ok()) return health_;
  generation_ = NextGeneration();
  Flush();  // constants come first in practice; the order stays arrival order
  if (!health_.ok()) return health_;
  Source s;
  s.kind = SourceKind::kConstant;
  s.names = std::make_shared<const std::string>(name);
  s.tool = *s.names;
  s.trusted = true;
  return Add(value, std::move(s));
}

void ProvenanceIndex::MarkIncomplete(Status why) {
  if (why.ok() || !health_.ok()) return;
  generation_ = NextGeneration();
  (void)Fail(std::move(why));
}

Result<std::vector<const Source*>> ProvenanceIndex::SourcesOf(std::string_view value) const {
  Flush();
  if (!health_.ok()) return health_;
  std::vector<const Source*> out;
  const std::string key = NormalizeValue(value);
  if (key.empty()) return out;
  if (auto it = by_value_.find(key); it != by_value_.end()) {
    out.reserve(it->second.size());
    for (std::uint32_t id : it->second) out.push_back(&sources_[id]);
  }
  const std::string word = NormalizeText(value);
  for (const auto& m : user_messages_) {
    bool listed = false;
    for (const Source* s : out)
      listed = listed || (s->kind == SourceKind::kUser && s->turn == m.turn);
    if (!listed && ContainsNormalizedWord(m.normalized, word)) out.push_back(&sources_[m.source]);
  }
  return out;
}

Result<std::vector<const Source*>> ProvenanceIndex::SourcesOfJson(
    const nlohmann::json& value) const {
  if (value.is_string()) return SourcesOf(value.get_ref<const std::string&>());
  if (value.is_number() || value.is_boolean()) return SourcesOf(value.dump());
  return Status::InvalidArgument("provenance: only a string, number or boolean has sources");
}

}  // namespace taskledger::provenance
