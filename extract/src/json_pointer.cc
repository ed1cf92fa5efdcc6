// Parsing and resolving the wildcard JSON Pointers of extract.json mappings.
// Pure functions over immutable data; thread-safe.
#include "internal/json_pointer.h"

namespace taskledger::extract_internal {
namespace {

// RFC 6901 array index: "0" or a digit string without a leading zero.
size_t ParseIndex(std::string_view s) {
  if (s.empty() || s.size() > 18 || (s.size() > 1 && s[0] == '0')) return std::string::npos;
  size_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::string::npos;
    v = v * 10 + static_cast<size_t>(c - '0');
  }
  return v;
}

}  // namespace

Result<CompiledPointer> CompiledPointer::Parse(std::string_view text, bool allow_wildcards) {
  CompiledPointer p;
  p.text_ = std::string(text);
  if (text.empty()) return p;
  if (text[0] != '/') {
    return Status::InvalidArgument("JSON pointer '" + std::string(text) + "' must start with '/'");
  }
  size_t pos = 1;
  while (true) {
    size_t end = text.find('/', pos);
    std::string_view raw = text.substr(pos, end == std::string_view::npos ? end : end - pos);
    PointerSegment seg;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '~') {
        seg.name.push_back(raw[i]);
      } else if (i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        seg.name.push_back(raw[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        return Status::InvalidArgument("JSON pointer '" + std::string(text) +
                                       "' has a '~' not followed by 0 or 1");
      }
    }
    if (raw == "*") {
      if (!allow_wildcards) {
        return Status::InvalidArgument("JSON pointer '" + std::string(text) +
                                       "' may not contain a wildcard here");
      }
      seg.wildcard = true;
      ++p.wildcards_;
    } else {
      seg.index = ParseIndex(seg.name);
    }
    p.segments_.push_back(std::move(seg));
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return p;
}

std::string CompiledPointer::Describe(const std::vector<Capture>& captures) const {
  std::string out;
  size_t w = 0;
  for (const PointerSegment& s : segments_) {
    out += '/';
    std::string_view name = s.name;
    std::string index;
    if (s.wildcard) {
      const Capture& c = ++w < captures.size() ? captures[w] : Capture{};
      if (c.is_index) {
        index = std::to_string(c.index);
        name = index;
      } else {
        name = c.text;
      }
    }
    for (char ch : name) {
      if (ch == '~') {
        out += "~0";
      } else if (ch == '/') {
        out += "~1";
      } else {
        out += ch;
      }
    }
  }
  return out;
}

const nlohmann::json* CompiledPointer::Resolve(const nlohmann::json& from) const {
  const nlohmann::json* node = &from;
  for (const PointerSegment& s : segments_) {
    node = Step(*node, s);
    if (node == nullptr) return nullptr;
  }
  return node;
}

}  // namespace taskledger::extract_internal
