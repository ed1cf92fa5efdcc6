// RulePack: one domain's policy rules, Lua extractors, extraction mappings and
// tool classification, loaded from a folder (rules/<pack>/) and immutable.
//
// Loading reads every file of the folder (pack.json, extract.json, *.lua,
// tests/*.json), computes the pack version (SHA-256 over the files sorted by
// path, each as path, NUL, contents), and compiles the Lua once in a throwaway
// sandbox so that a syntax error, a malformed rule{} or a duplicate rule id is
// reported at load time rather than at the first decision. The Lua itself is
// run again by each PolicyChecker in its own lua_State.
//
// Share a loaded pack as std::shared_ptr<const RulePack>: every method is
// const and the object never changes, so it is safe to read from any number
// of threads. Replacing a pack means loading a new RulePack.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/base/json_depth.h"
#include "taskledger/base/status.h"
#include "taskledger/provenance/trust.h"

namespace taskledger {

// How the gate treats a tool.
enum class ToolClass {
  kReadOnly,  // never blocked: no rule runs
  kWrites,    // declared environment-changing: rules run
  kUnknown,   // in neither list: pack.json "unknown_tools" decides
};
std::string_view ToolClassName(ToolClass c);  // "read_only", "writes", "unknown"

// What a rule declared (for listings, coverage and the CLI).
struct RuleInfo {
  std::string id;
  std::vector<std::string> tools;  // names or globs
  int64_t priority = 0;
  std::string description;
  std::string file;  // the .lua file (relative path) that declared it
};

struct ExtractorInfo {
  std::string id;
  std::vector<std::string> tools;  // names or globs; may be empty when `user`
  bool user = false;               // also runs on every user message (user = true)
  std::string file;
};

// One file of the pack, path relative to the pack folder with '/' separators.
struct PackFile {
  std::string path;
  std::string contents;
};

// `*` matches any run of characters (including none), `?` exactly one;
// everything else matches itself. Case-sensitive.
bool GlobMatch(std::string_view pattern, std::string_view name);

// What a model is told to do next after a denial, when pack.json has no
// "denial_hint": fits any domain.
inline constexpr std::string_view kDefaultDenialHint =
    "Resolve what the rule says first (for example, look up the missing facts or ask the "
    "user), then try again if it is still appropriate; do not repeat the same call unchanged.";
// The longest "denial_hint" pack.json may hold (bytes): it goes into every denial.
inline constexpr size_t kMaxDenialHintBytes = 1000;

class RulePack {
 public:
  // Loads rules/<pack>/ from `dir`. Errors: NotFound (no folder or no
  // pack.json), InvalidArgument (malformed pack.json / extract.json / test
  // file, Lua syntax error, bad rule{} or extractor{}, duplicate id), with the
  // file and line in the message. Hidden files (name starting with '.') and
  // files larger than 4 MiB are refused / skipped as documented in
  // docs/rule-api.md.
  static Result<std::shared_ptr<const RulePack>> Load(const std::filesystem::path& dir);
  // The same from in-memory files (tests, embedded packs). Paths are relative.
  static Result<std::shared_ptr<const RulePack>> FromFiles(std::vector<PackFile> files);
  RulePack(const RulePack&) = delete;
  RulePack& operator=(const RulePack&) = delete;

  // pack.json "name".
  const std::string& name() const { return name_; }
  // Lower-case hex SHA-256 of the files (see above).
  const std::string& version() const { return version_; }
  // Every file, sorted by path (what the version covers).
  const std::vector<PackFile>& files() const { return files_; }
  // The *.lua files, sorted by path (the order a checker runs them in).
  const std::vector<const PackFile*>& lua_files() const { return lua_files_; }
  // The lib/*.lua files (at any depth below lib/): libraries the pack's Lua
  // loads with require("name") for lib/name.lua; never run on their own.
  const std::vector<const PackFile*>& lib_files() const { return lib_files_; }
  // pack.json, parsed.
  const nlohmann::json& manifest() const { return manifest_; }
  // extract.json, parsed; nullptr if the pack has none.
  const nlohmann::json* extract_spec() const { return extract_ ? &*extract_ : nullptr; }
  // extract.json's limits.max_depth (kDefaultMaxJsonDepth without one): how
  // deep the JSON values the pack's extraction and Lua code see may nest.
  int max_json_depth() const { return max_json_depth_; }
  // tests/*.json, parsed, by relative path.
  const std::map<std::string, nlohmann::json>& tests() const { return tests_; }

  // Classification of `tool`. A name matching a "writes" entry is kWrites even
  // if it also matches a "read_only" glob (the safe reading of an overlap); so
  // is a name matching an "egress" entry.
  ToolClass Classify(std::string_view tool) const;
  // pack.json tools.egress: a tool that reads but sends data out (a URL it
  // fetches carries data). Gated and logged like a write (Classify says
  // kWrites), but never run as a command of the command ledger.
  bool IsEgress(std::string_view tool) const;
  // pack.json "trust" (provenance/trust.h); the default policy without one.
  const provenance::TrustPolicy& trust() const { return trust_; }
  // pack.json "unknown_tools" == "allow" (default false: unknown tools are denied).
  bool allow_unknown_tools() const { return allow_unknown_; }
  // pack.json "denial_hint" (kDefaultDenialHint without one): the sentence a
  // denial's message ends with, telling the model what to do next in the
  // pack's domain (DenialMessage in session.h).
  const std::string& denial_hint() const { return denial_hint_; }

  // Rules and extractors the pack declares, rules in evaluation order
  // (priority descending, then id ascending).
  const std::vector<RuleInfo>& rules() const { return rules_; }
  const std::vector<ExtractorInfo>& extractors() const { return extractors_; }
  bool HasExtractors(std::string_view tool) const;

 private:
  RulePack() = default;
  static Result<std::shared_ptr<const RulePack>> Build(std::vector<PackFile> files);

  std::string name_;
  std::string version_;
  std::vector<PackFile> files_;
  std::vector<const PackFile*> lua_files_;
  std::vector<const PackFile*> lib_files_;
  nlohmann::json manifest_;
  std::optional<nlohmann::json> extract_;
  std::map<std::string, nlohmann::json> tests_;
  std::vector<std::string> read_only_;
  std::vector<std::string> writes_;
  std::vector<std::string> egress_;
  provenance::TrustPolicy trust_;
  bool allow_unknown_ = false;
  std::string denial_hint_{kDefaultDenialHint};
  int max_json_depth_ = kDefaultMaxJsonDepth;
  std::vector<RuleInfo> rules_;
  std::vector<ExtractorInfo> extractors_;
};

}  // namespace taskledger
