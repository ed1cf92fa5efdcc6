// Loading a pack into a checker's runtime (see internal/rule_runtime.h).
#include "internal/rule_runtime.h"

namespace taskledger::policy_internal {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Appends every run of name characters that follows `marker` in `text`.
void NamesAfter(std::string_view text, std::string_view marker, std::vector<std::string>& out) {
  for (size_t at = text.find(marker); at != std::string_view::npos;
       at = text.find(marker, at + 1)) {
    size_t end = at + marker.size();
    while (end < text.size() && IsNameChar(text[end])) ++end;
    if (end > at + marker.size()) {
      out.emplace_back(text.substr(at + marker.size(), end - at - marker.size()));
    }
  }
}

}  // namespace

std::vector<std::string> DeclaredNames(const RulePack& pack) {
  std::vector<std::string> names;
  auto tool = [&](const std::string& name) {
    if (name.find_first_of("*?") == std::string::npos) names.push_back(name);
  };
  const nlohmann::json& tools = pack.manifest().value("tools", nlohmann::json::object());
  for (const char* list : {"writes", "egress", "read_only"}) {
    auto it = tools.is_object() ? tools.find(list) : tools.end();
    if (it == tools.end() || !it->is_array()) continue;
    for (const nlohmann::json& name : *it) {
      if (name.is_string()) tool(name.get<std::string>());
    }
  }
  for (const RuleInfo& rule : pack.rules()) {
    for (const std::string& name : rule.tools) tool(name);
  }
  for (const ExtractorInfo& extractor : pack.extractors()) {
    for (const std::string& name : extractor.tools) tool(name);
  }
  const nlohmann::json* spec = pack.extract_spec();
  if (spec != nullptr && spec->is_object() && spec->contains("tools") &&
      (*spec)["tools"].is_object()) {
    for (const auto& [name, _] : (*spec)["tools"].items()) tool(name);
  }
  for (const PackFile& file : pack.files()) {
    if (file.path == "extract.json") NamesAfter(file.contents, "{@", names);
  }
  for (const auto& files : {pack.lua_files(), pack.lib_files()}) {
    for (const PackFile* file : files) NamesAfter(file->contents, "args.", names);
  }
  return names;
}

Result<std::unique_ptr<RuleRuntime>> LoadRuleRuntime(const RulePack& pack,
                                                     const CheckerLimits& limits) {
  // The views must have their final address before they are installed: the
  // Lua closures they create point at them.
  auto runtime = std::make_unique<RuleRuntime>();
  RuleRuntime* raw = runtime.get();
  const std::vector<std::string> declared = DeclaredNames(pack);
  auto compiled = lua::CompilePack(
      pack.lua_files(), limits,
      [raw, &declared](lua_State* L) {
        raw->view.Install(L);
        raw->call_view.Install(L, declared);
        raw->view.SetMemoCall(raw->call_view.ref());
        lua_rawgeti(L, LUA_REGISTRYINDEX, raw->call_view.call_data_ref());
        raw->provenance.Install(L, -1);
        lua_pop(L, 1);
        raw->log.Install(L);
      },
      pack.lib_files());
  if (!compiled) return compiled.error();
  runtime->compiled = std::move(compiled.value());
  return runtime;
}

}  // namespace taskledger::policy_internal
