// RenderVisibility (see taskledger/render/visibility.h): pattern parsing and
// matching, and redaction inside a value.
#include "taskledger/render/visibility.h"

namespace taskledger {
namespace {

std::vector<std::string> SplitKey(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t dot = s.find('.');; dot = s.find('.', start)) {
    out.emplace_back(s.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return out;
}

// A JSON Pointer's reference tokens, unescaped (~1 is '/', ~0 is '~').
Result<std::vector<std::string>> SplitPointer(const std::string& p) {
  std::vector<std::string> out;
  if (p.empty()) return out;
  if (p[0] != '/') return Status::InvalidArgument("pointer '" + p + "' must start with '/'");
  size_t start = 1;
  while (true) {
    size_t slash = p.find('/', start);
    std::string token = p.substr(start, slash == std::string::npos ? slash : slash - start);
    std::string plain;
    for (size_t i = 0; i < token.size(); ++i) {
      if (token[i] != '~') {
        plain += token[i];
      } else if (i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
        plain += token[++i] == '0' ? '~' : '/';
      } else {
        return Status::InvalidArgument("pointer '" + p + "' has a '~' not followed by 0 or 1");
      }
    }
    out.push_back(std::move(plain));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

void RedactAt(nlohmann::json& node, const std::vector<std::string>& tokens, size_t i) {
  if (i == tokens.size()) {
    node = "[redacted]";
    return;
  }
  const std::string& t = tokens[i];
  if (node.is_object()) {
    if (t == "*") {
      for (auto& [name, child] : node.items()) RedactAt(child, tokens, i + 1);
    } else if (auto it = node.find(t); it != node.end()) {
      RedactAt(*it, tokens, i + 1);
    }
  } else if (node.is_array()) {
    if (t == "*") {
      for (auto& child : node) RedactAt(child, tokens, i + 1);
      return;
    }
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos) {
      return;
    }
    const size_t index = std::stoul(t);
    if (index < node.size()) RedactAt(node[index], tokens, i + 1);
  }
}

Status Bad(const std::string& what) {
  return Status::InvalidArgument("pack.json \"render\": " + what);
}

Result<std::vector<std::string>> ParseKeyPattern(const nlohmann::json& p,
                                                 const std::string& where) {
  if (!p.is_string() || p.get<std::string>().empty()) {
    return Bad(where + " must be a non-empty key pattern string");
  }
  std::vector<std::string> segs = SplitKey(p.get<std::string>());
  for (const std::string& s : segs) {
    if (s.empty()) return Bad(where + " '" + p.get<std::string>() + "' has an empty segment");
  }
  return segs;
}

}  // namespace

Result<RenderVisibility> RenderVisibility::FromJson(const nlohmann::json& spec) {
  RenderVisibility v;
  if (spec.is_null()) return v;
  if (!spec.is_object()) return Bad("must be an object");
  for (const auto& [name, value] : spec.items()) {
    if (name == "internal") {
      if (!value.is_array()) return Bad("internal must be an array of key patterns");
      for (const auto& p : value) {
        auto segs = ParseKeyPattern(p, "internal entry");
        if (!segs) return segs.error();
        v.internal_.push_back(std::move(*segs));
      }
    } else if (name == "redact") {
      if (!value.is_object()) {
        return Bad("redact must be an object: key pattern -> array of JSON pointers");
      }
      for (const auto& [pattern, pointers] : value.items()) {
        auto segs = ParseKeyPattern(pattern, "redact key");
        if (!segs) return segs.error();
        if (!pointers.is_array() || pointers.empty()) {
          return Bad("redact '" + pattern + "' must be a non-empty array of JSON pointers");
        }
        std::vector<Segments> parsed;
        for (const auto& p : pointers) {
          if (!p.is_string()) return Bad("redact '" + pattern + "': pointers must be strings");
          auto tokens = SplitPointer(p.get<std::string>());
          if (!tokens) return Bad("redact '" + pattern + "': " + tokens.error().message());
          parsed.push_back(std::move(*tokens));
        }
        v.redact_.emplace_back(std::move(*segs), std::move(parsed));
      }
    } else {
      return Bad("unknown member '" + name + "' (internal, redact)");
    }
  }
  return v;
}

bool RenderVisibility::Covers(const Segments& pattern, std::string_view key) {
  size_t start = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (start > key.size()) return false;
    size_t dot = key.find('.', start);
    std::string_view seg = key.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (pattern[i] != "*" && pattern[i] != seg) return false;
    start = dot == std::string_view::npos ? key.size() + 1 : dot + 1;
  }
  return true;  // the whole key, or a key below it
}

bool RenderVisibility::Hides(std::string_view key) const {
  for (const Segments& p : internal_) {
    if (Covers(p, key)) return true;
  }
  return false;
}

bool RenderVisibility::Redacts(std::string_view key) const {
  for (const auto& r : redact_) {
    if (Covers(r.first, key)) return true;
  }
  return false;
}

bool RenderVisibility::Redact(std::string_view key, nlohmann::json& value) const {
  bool matched = false;
  for (const auto& [pattern, pointers] : redact_) {
    if (!Covers(pattern, key)) continue;
    matched = true;
    for (const Segments& tokens : pointers) RedactAt(value, tokens, 0);
  }
  return matched;
}

}  // namespace taskledger
