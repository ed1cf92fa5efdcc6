// TrustPolicy: parsing of pack.json's `trust` object and the per-path lookup.
// Tool globs use `*` for any run of characters; path patterns are compared
// segment by segment with `*` and `**`.
#include "taskledger/provenance/trust.h"

#include <algorithm>

namespace taskledger::provenance {
namespace {

std::vector<std::string> Split(std::string_view pointer) {
  std::vector<std::string> out;
  if (pointer.empty()) return out;
  std::size_t at = pointer.front() == '/' ? 1 : 0;
  while (true) {
    const auto slash = pointer.find('/', at);
    out.emplace_back(pointer.substr(at, slash == std::string_view::npos ? slash : slash - at));
    if (slash == std::string_view::npos) break;
    at = slash + 1;
  }
  return out;
}

// Split without copying: the segments of `pointer` as views into it (one
// allocation for the list; Trusted runs once per indexed field).
std::vector<std::string_view> SplitViews(std::string_view pointer) {
  std::vector<std::string_view> out;
  if (pointer.empty()) return out;
  std::size_t at = pointer.front() == '/' ? 1 : 0;
  while (true) {
    const auto slash = pointer.find('/', at);
    out.push_back(pointer.substr(at, slash == std::string_view::npos ? slash : slash - at));
    if (slash == std::string_view::npos) break;
    at = slash + 1;
  }
  return out;
}

bool GlobMatch(std::string_view pat, std::string_view s) {
  if (pat.empty()) return s.empty();
  if (pat.front() == '*') {
    for (std::size_t k = 0; k <= s.size(); ++k) {
      if (GlobMatch(pat.substr(1), s.substr(k))) return true;
    }
    return false;
  }
  return !s.empty() && pat.front() == s.front() && GlobMatch(pat.substr(1), s.substr(1));
}

bool SegmentsMatch(const std::vector<std::string>& pat, std::size_t p,
                   const std::vector<std::string_view>& segs, std::size_t s) {
  if (p == pat.size()) return s == segs.size();
  if (pat[p] == "**") {
    for (std::size_t k = s; k <= segs.size(); ++k) {
      if (SegmentsMatch(pat, p + 1, segs, k)) return true;
    }
    return false;
  }
  if (s == segs.size()) return false;
  return (pat[p] == "*" || pat[p] == segs[s]) && SegmentsMatch(pat, p + 1, segs, s + 1);
}

int Literals(const std::vector<std::string>& segs) {
  return static_cast<int>(
      std::count_if(segs.begin(), segs.end(), [](const auto& s) { return s != "*" && s != "**"; }));
}

}  // namespace

Result<TrustPolicy> TrustPolicy::FromJson(const nlohmann::json& trust) {
  TrustPolicy policy;
  if (trust.is_null()) return policy;
  if (!trust.is_object()) return Status::InvalidArgument("trust: must be an object");
  for (const auto& [key, value] : trust.items()) {
    if (key == "user" || key == "default") {
      if (!value.is_boolean())
        return Status::InvalidArgument("trust." + key + ": must be a boolean");
      (key == "user" ? policy.user_ : policy.default_) = value.get<bool>();
    } else if (key == "tools") {
      if (!value.is_object()) return Status::InvalidArgument("trust.tools: must be an object");
      for (const auto& [tool, decl] : value.items()) {
        if (tool.empty()) return Status::InvalidArgument("trust.tools: empty tool name");
        ToolRule rule{tool, {}};
        if (decl.is_boolean()) {
          rule.paths.push_back(PathRule{"**", {"**"}, decl.get<bool>()});
        } else if (decl.is_object()) {
          for (const auto& [path, flag] : decl.items()) {
            if (!flag.is_boolean()) {
              return Status::InvalidArgument("trust.tools." + tool + "[\"" + path +
                                             "\"]: must be a boolean");
            }
            if (!path.empty() && path.front() != '/' && path != "**") {
              return Status::InvalidArgument(
                  "trust.tools." + tool + ": path \"" + path +
                  "\" must be a JSON pointer (\"/a/*/b\"), \"\" or \"**\"");
            }
            rule.paths.push_back(PathRule{path, Split(path), flag.get<bool>()});
          }
        } else {
          return Status::InvalidArgument("trust.tools." + tool +
                                         ": must be a boolean or an object of paths");
        }
        policy.tools_.push_back(std::move(rule));
      }
    } else {
      return Status::InvalidArgument("trust: unknown key \"" + key +
                                     "\" (expected user, default, tools)");
    }
  }
  return policy;
}

const TrustPolicy::ToolRule* TrustPolicy::FindTool(std::string_view tool) const {
  const ToolRule* best = nullptr;
  for (const auto& rule : tools_) {
    if (rule.tool == tool) return &rule;
    if (rule.tool.find('*') != std::string::npos && GlobMatch(rule.tool, tool) &&
        (best == nullptr || rule.tool.size() > best->tool.size())) {
      best = &rule;
    }
  }
  return best;
}

bool TrustPolicy::Trusted(std::string_view tool, std::string_view pointer) const {
  const ToolRule* rule = FindTool(tool);
  if (rule == nullptr) return default_;
  if (rule->paths.empty()) return default_;
  const auto segs = SplitViews(pointer);
  int best = -1;
  bool trusted = default_;
  for (const auto& p : rule->paths) {
    if (!SegmentsMatch(p.segments, 0, segs, 0)) continue;
    const int score = Literals(p.segments);
    if (score > best) {
      best = score;
      trusted = p.trusted;
    } else if (score == best) {
      trusted = trusted && p.trusted;
    }
  }
  return trusted;
}

nlohmann::json TrustPolicy::ToJson() const {
  nlohmann::json tools = nlohmann::json::object();
  for (const auto& rule : tools_) {
    nlohmann::json paths = nlohmann::json::object();
    for (const auto& p : rule.paths) paths[p.pattern] = p.trusted;
    tools[rule.tool] = std::move(paths);
  }
  return {{"user", user_}, {"default", default_}, {"tools", std::move(tools)}};
}

}  // namespace taskledger::provenance
