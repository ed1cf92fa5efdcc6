// CompiledPack: a rule pack's Lua run in its own Sandbox, with the rule{} and
// extractor{} declarations it made. Each PolicyChecker owns one (through
// policy/src/internal/rule_runtime.h); RulePack builds a throwaway one at load
// time to validate the pack and list its rules. Shared with policy/, not
// installed.
// Not thread-safe: belongs to one thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <functional>

#include "taskledger/base/shared_string.h"
#include "taskledger/pack/lua/sandbox.h"
#include "taskledger/pack/rule_pack.h"

namespace taskledger::lua {

struct CompiledRule {
  RuleInfo info;
  SharedString id;      // info.id, shared by the evaluations naming the rule
  int ref = LUA_NOREF;  // registry reference to check(), or to why() when `why`
  // Declared with rule{ why = fn }: ref returns the deny reason (a non-empty
  // string) or nil to allow, instead of a verdict (docs/rule-api.md).
  bool why = false;
  // Registry reference to the rule's facts() (LUA_NOREF without one). Rules
  // declared with the same function share one reference, so a check computes
  // it once for all of them.
  int facts_ref = LUA_NOREF;
};

struct CompiledExtractor {
  ExtractorInfo info;
  int ref = LUA_NOREF;  // registry reference to extract()
};

struct CompiledPack {
  std::unique_ptr<Sandbox> sandbox;
  std::vector<CompiledRule> rules;            // priority descending, then id
  std::vector<CompiledExtractor> extractors;  // file order, then declaration order
  std::string loading_file;                   // the file whose top level is running
  std::vector<const PackFile*> lib_files;     // lib/*.lua, loaded by require()
};

// Creates a sandbox and runs `lua_files` (in the given order) in it. Errors:
// InvalidArgument for syntax errors, bad declarations and duplicate ids,
// LimitExceeded if the top level ran out of budget or memory.
// `install`, if given, runs in the sandbox before the files do (the policy
// checker installs the rule API's `ledger` and `call` objects with it).
// Every sandbox gets `std` (lua_std.h), a `log` that discards (the checker
// replaces it) and `require(name)`, which runs `lib/<name>.lua` of
// `lib_files` once (its result is cached; a library may not write globals).
Result<std::unique_ptr<CompiledPack>> CompilePack(
    const std::vector<const PackFile*>& lua_files, const CheckerLimits& limits,
    const std::function<void(lua_State*)>& install = nullptr,
    const std::vector<const PackFile*>& lib_files = {});

}  // namespace taskledger::lua
