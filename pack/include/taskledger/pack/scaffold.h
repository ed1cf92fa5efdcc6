// Pack scaffolding (`taskledger pack new`): turns tool schemas in the OpenAI
// function-calling format into the files of a new rule pack that loads and
// whose policy tests pass, for its author to review and then tighten.
//
// Classification heuristic (documented in docs/rule-api.md): a tool whose name
// starts with get_, list_, find_, search_ or read_ is read-only; every other
// tool is a write (the safe default: rules run for it). The generated
// pack.json says that the author must review the lists.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"
#include "taskledger/pack/rule_pack.h"

namespace taskledger {

struct ScaffoldTool {
  std::string name;
  std::string description;
  bool writes = true;                 // !IsReadOnlyByName(name)
  std::vector<std::string> required;  // parameters.required, if any
};

// True when `name` starts with one of the read-only prefixes above.
bool IsReadOnlyByName(std::string_view name);

// Reads tool schemas: a JSON array (or {"tools": [...]}) of either
// {"name", "description", "parameters"} or {"type": "function", "function":
// {...}} objects. Errors: InvalidArgument naming the offending entry (no
// name, a name that is not [A-Za-z0-9_.-]+, a duplicate name, no tools).
Result<std::vector<ScaffoldTool>> ParseToolSchemas(const nlohmann::json& schemas);

// The files of a new pack called `name` (non-empty, [A-Za-z0-9_-]+):
// pack.json, extract.json, policy.lua (one require_approval rule per write
// tool, to be replaced) and tests/policy.json (one case per write tool and
// one for a read-only tool). REQUIRES: tools from ParseToolSchemas.
Result<std::vector<PackFile>> ScaffoldPack(std::string_view name,
                                           const std::vector<ScaffoldTool>& tools);

// Writes `files` into the new directory `dir`. Errors:
// FailedPrecondition when `dir` exists (nothing is overwritten), Unavailable
// when a file cannot be written.
Status WritePackFiles(const std::filesystem::path& dir, const std::vector<PackFile>& files);

}  // namespace taskledger
