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

// Split without copying: the segments of `pointer` as views into it, in
// `out` (reused across calls: Trusted runs once per indexed field).
std::size_t SplitViews(std::string_view pointer, std::vector<std::string_view>& out) {
  out.clear();
  if (pointer.empty()) return 0;
  std::size_t at = pointer.front() == '/' ? 1 : 0;
  while (true) {
    const auto slash = pointer.find('/', at);
    out.push_back(pointer.substr(at, slash == std::string_view::npos ? slash : slash - at));
    if (slash == std::string_view::npos) break;
    at = slash + 1;
  }
  return out.size();
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

TrustPolicy::ToolTrust TrustPolicy::ForTool(std::string_view tool) const {
  ToolTrust t;
  t.policy_ = this;
  t.rule_ = FindTool(tool);
  return t;
}

bool TrustPolicy::ToolTrust::Trusted(std::string_view pointer) const {
  if (policy_ == nullptr) return false;
  if (rule_ == nullptr || rule_->paths.empty()) return policy_->default_;
  std::vector<std::string_view>& segs = segments_;
  SplitViews(pointer, segs);
  int best = -1;
  bool trusted = policy_->default_;
  for (const auto& p : rule_->paths) {
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

bool TrustPolicy::Trusted(std::string_view tool, std::string_view pointer) const {
  return ForTool(tool).Trusted(pointer);
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
