// What pack.json "render" kept out of the prompt, for the audit (see
// audit_visibility.h). The same tests as the renderer (render/src/state_block.cc):
// an entry is internal when Hides(key), redacted when Redact changes its value.
#include "audit_visibility.h"

#include "taskledger/pack/rule_pack.h"

namespace taskledger::cli {

Result<std::optional<RenderVisibility>> LoadRenderVisibility(const std::string& rules_dir) {
  if (rules_dir.empty()) return std::optional<RenderVisibility>();
  auto pack = RulePack::Load(rules_dir);
  if (!pack) {
    return Status::InvalidArgument("cannot load rule pack " + rules_dir + ": " +
                                   pack.error().message());
  }
  const nlohmann::json& manifest = (*pack)->manifest();
  auto section = manifest.find("render");
  auto parsed = RenderVisibility::FromJson(section == manifest.end() ? nlohmann::json() : *section);
  if (!parsed) {
    return Status::InvalidArgument(rules_dir + "/pack.json: " + parsed.error().message());
  }
  return std::optional<RenderVisibility>(std::move(*parsed));
}

PromptMarks MarkPrompt(const LedgerState& state, int64_t now_ms, const RenderVisibility& vis) {
  PromptMarks marks;
  if (vis.empty()) return marks;
  for (Category c : kAllCategories) {
    for (const auto& [key, entry] : state.of(c)) {
      if (!entry.LiveAt(state.version, now_ms)) continue;
      if (vis.Hides(key)) {
        marks.internal.push_back({c, key});
        continue;
      }
      if (!vis.Redacts(key)) continue;
      nlohmann::json value = entry.value;
      if (vis.Redact(key, value) && value != entry.value) marks.redacted.push_back({c, key});
    }
  }
  return marks;
}

nlohmann::json PromptMarksJson(const PromptMarks& marks) {
  auto list = [](const std::vector<PromptMarks::Item>& items) {
    nlohmann::json out = nlohmann::json::array();
    for (const PromptMarks::Item& i : items) {
      out.push_back({{"category", CategoryName(i.category)}, {"key", i.key}});
    }
    return out;
  };
  return {{"internal", list(marks.internal)}, {"redacted", list(marks.redacted)}};
}

std::string PromptMarksText(const PromptMarks& marks) {
  std::string out =
      "kept out of the prompt by pack.json \"render\": " + std::to_string(marks.internal.size()) +
      " internal, " + std::to_string(marks.redacted.size()) + " redacted\n";
  auto lines = [&out](const char* what, const std::vector<PromptMarks::Item>& items) {
    for (const PromptMarks::Item& i : items) {
      out += "  ";
      out += what;
      out += "  ";
      out += CategoryName(i.category);
      out += " " + i.key + "\n";
    }
  };
  lines("internal", marks.internal);
  lines("redacted", marks.redacted);
  return out;
}

}  // namespace taskledger::cli
