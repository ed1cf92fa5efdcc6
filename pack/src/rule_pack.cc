// Loading and classifying rule packs (see rule_pack.h). Loading reads files
// and validates JSON and Lua; the loaded object is immutable afterwards.
#include "taskledger/pack/rule_pack.h"

#include <algorithm>
#include <exception>
#include <fstream>
#include <sstream>

#include "taskledger/base/digest.h"
#include "taskledger/pack/lua/compiled_pack.h"
#include "taskledger/provenance/constants.h"

namespace taskledger {
namespace {

constexpr uintmax_t kMaxFileBytes = 4u << 20;
constexpr size_t kMaxFiles = 1000;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Result<std::vector<std::string>> ReadToolList(const nlohmann::json& tools, const char* name) {
  std::vector<std::string> out;
  auto it = tools.find(name);
  if (it == tools.end()) return out;
  if (!it->is_array()) {
    return Status::InvalidArgument(std::string("pack.json: tools.") + name + " must be an array");
  }
  for (const auto& t : *it) {
    if (!t.is_string() || t.get_ref<const std::string&>().empty()) {
      return Status::InvalidArgument(std::string("pack.json: tools.") + name +
                                     " must hold non-empty strings");
    }
    out.push_back(t.get<std::string>());
  }
  return out;
}

}  // namespace

std::string_view ToolClassName(ToolClass c) {
  switch (c) {
    case ToolClass::kReadOnly:
      return "read_only";
    case ToolClass::kWrites:
      return "writes";
    case ToolClass::kUnknown:
      return "unknown";
  }
  return "unknown";
}

bool GlobMatch(std::string_view pattern, std::string_view name) {
  // Iterative matcher: on a mismatch, retry from the last '*' one character
  // further. Linear in practice, O(n*m) worst case, no recursion.
  size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

Result<std::shared_ptr<const RulePack>> RulePack::Load(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  try {
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      return Status::NotFound("no rule pack folder at " + dir.string());
    if (!fs::is_regular_file(dir / "pack.json", ec)) {
      return Status::NotFound("rule pack " + dir.string() + " has no pack.json");
    }
    std::vector<PackFile> files;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      std::string leaf = it->path().filename().string();
      if (!leaf.empty() && leaf[0] == '.') {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file()) continue;
      if (it->file_size() > kMaxFileBytes) {
        return Status::InvalidArgument("rule pack file " + it->path().string() +
                                       " is larger than 4 MiB");
      }
      if (files.size() >= kMaxFiles) {
        return Status::InvalidArgument("rule pack " + dir.string() + " has more than 1000 files");
      }
      std::ifstream in(it->path(), std::ios::binary);
      std::ostringstream buf;
      buf << in.rdbuf();
      if (!in) return Status::Unavailable("cannot read " + it->path().string());
      files.push_back({fs::relative(it->path(), dir).generic_string(), buf.str()});
    }
    if (ec) return Status::Unavailable("cannot list " + dir.string() + ": " + ec.message());
    return Build(std::move(files));
  } catch (const std::exception& e) {
    return Status::Unavailable("reading rule pack " + dir.string() + ": " + e.what());
  }
}

Result<std::shared_ptr<const RulePack>> RulePack::FromFiles(std::vector<PackFile> files) {
  try {
    return Build(std::move(files));
  } catch (const std::exception& e) {
    return Status::Internal(std::string("building rule pack: ") + e.what());
  }
}

Result<std::shared_ptr<const RulePack>> RulePack::Build(std::vector<PackFile> files) {
  std::shared_ptr<RulePack> pack(new RulePack());
  std::sort(files.begin(), files.end(),
            [](const PackFile& a, const PackFile& b) { return a.path < b.path; });
  std::string hashed;
  for (size_t i = 0; i < files.size(); ++i) {
    if (i > 0 && files[i].path == files[i - 1].path) {
      return Status::InvalidArgument("duplicate pack file " + files[i].path);
    }
    // path NUL length NUL contents: unambiguous however the contents look.
    hashed += files[i].path;
    hashed.push_back('\0');
    hashed += std::to_string(files[i].contents.size());
    hashed.push_back('\0');
    hashed += files[i].contents;
  }
  pack->version_ = Sha256Hex(hashed);
  pack->files_ = std::move(files);

  const PackFile* manifest = nullptr;
  for (const PackFile& f : pack->files_) {
    if (f.path == "pack.json") {
      manifest = &f;
    } else if (f.path == "extract.json") {
      nlohmann::json j = nlohmann::json::parse(f.contents, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        return Status::InvalidArgument("extract.json is not a JSON object");
      }
      const auto limits = j.find("limits");
      if (limits != j.end() && limits->is_object() && limits->contains("max_depth")) {
        Result<int> depth = ParseMaxJsonDepth((*limits)["max_depth"]);
        if (!depth)
          return Status::InvalidArgument("extract.json limits: " + depth.error().message());
        pack->max_json_depth_ = *depth;
      }
      pack->extract_ = std::move(j);
    } else if (f.path.rfind("tests/", 0) == 0 && EndsWith(f.path, ".json")) {
      nlohmann::json j = nlohmann::json::parse(f.contents, nullptr, false);
      if (j.is_discarded()) return Status::InvalidArgument(f.path + " is not valid JSON");
      pack->tests_.emplace(f.path, std::move(j));
    } else if (EndsWith(f.path, ".lua") && f.path.find('/') == std::string::npos) {
      pack->lua_files_.push_back(&f);
    } else if (EndsWith(f.path, ".lua") && f.path.rfind("lib/", 0) == 0) {
      pack->lib_files_.push_back(&f);
    }
  }
  if (manifest == nullptr) return Status::NotFound("rule pack has no pack.json");
  pack->manifest_ = nlohmann::json::parse(manifest->contents, nullptr, false);
  const nlohmann::json& m = pack->manifest_;
  if (m.is_discarded() || !m.is_object())
    return Status::InvalidArgument("pack.json is not a JSON object");
  if (!m.contains("name") || !m["name"].is_string() || m["name"].get<std::string>().empty()) {
    return Status::InvalidArgument("pack.json: name must be a non-empty string");
  }
  pack->name_ = m["name"].get<std::string>();
  if (m.contains("tools")) {
    if (!m["tools"].is_object())
      return Status::InvalidArgument("pack.json: tools must be an object");
    auto ro = ReadToolList(m["tools"], "read_only");
    if (!ro) return ro.error();
    auto wr = ReadToolList(m["tools"], "writes");
    if (!wr) return wr.error();
    auto eg = ReadToolList(m["tools"], "egress");
    if (!eg) return eg.error();
    pack->read_only_ = std::move(ro.value());
    pack->writes_ = std::move(wr.value());
    pack->egress_ = std::move(eg.value());
  }
  if (m.contains("trust")) {
    auto trust = provenance::TrustPolicy::FromJson(m["trust"]);
    if (!trust) return Status::InvalidArgument("pack.json: " + trust.error().message());
    pack->trust_ = std::move(trust).value();
  }
  if (m.contains("constants")) {
    auto constants = provenance::ParseConstants(m["constants"]);
    if (!constants) {
      // 0.1 packs could carry a "constants" key of their own; say what to change.
      return Status::InvalidArgument(
          "pack.json: " + constants.error().message() +
          " (since 0.2 \"constants\" declares values the pack trusts, docs/rule-api.md; a "
          "pack that used this key for something else must rename it)");
    }
  }
  if (m.contains("unknown_tools")) {
    const nlohmann::json& u = m["unknown_tools"];
    if (u != "deny" && u != "allow") {
      return Status::InvalidArgument("pack.json: unknown_tools must be \"deny\" or \"allow\"");
    }
    pack->allow_unknown_ = u == "allow";
  }
  if (m.contains("denial_hint")) {
    const nlohmann::json& h = m["denial_hint"];
    if (!h.is_string() || h.get<std::string>().empty() ||
        h.get<std::string>().size() > kMaxDenialHintBytes) {
      return Status::InvalidArgument(
          "pack.json: denial_hint must be a non-empty string of at most " +
          std::to_string(kMaxDenialHintBytes) + " bytes");
    }
    pack->denial_hint_ = h.get<std::string>();
  }

  // Run the Lua once now, so a broken pack fails to load instead of failing
  // every decision later.
  auto compiled = lua::CompilePack(pack->lua_files_, CheckerLimits{}, nullptr, pack->lib_files_);
  if (!compiled) return compiled.error();
  for (const auto& r : compiled.value()->rules) pack->rules_.push_back(r.info);
  for (const auto& x : compiled.value()->extractors) pack->extractors_.push_back(x.info);
  return std::shared_ptr<const RulePack>(std::move(pack));
}

ToolClass RulePack::Classify(std::string_view tool) const {
  for (const std::string& g : writes_) {
    if (GlobMatch(g, tool)) return ToolClass::kWrites;
  }
  if (IsEgress(tool)) return ToolClass::kWrites;
  for (const std::string& g : read_only_) {
    if (GlobMatch(g, tool)) return ToolClass::kReadOnly;
  }
  return ToolClass::kUnknown;
}

bool RulePack::IsEgress(std::string_view tool) const {
  for (const std::string& g : egress_) {
    if (GlobMatch(g, tool)) return true;
  }
  return false;
}

bool RulePack::HasExtractors(std::string_view tool) const {
  for (const ExtractorInfo& x : extractors_) {
    for (const std::string& g : x.tools) {
      if (GlobMatch(g, tool)) return true;
    }
  }
  return false;
}

}  // namespace taskledger
