// CompiledPack: a rule pack's Lua run in its own Sandbox, with the rule{} and
// extractor{} declarations it made. PolicyChecker owns one; RulePack builds a
// throwaway one at load time to validate the pack and list its rules.
// Not thread-safe: belongs to one thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "internal/call_view.h"
#include "internal/ledger_view.h"
#include "internal/sandbox.h"
#include "taskledger/policy/rule_pack.h"

namespace taskledger::policy_internal {

struct CompiledRule {
  RuleInfo info;
  SharedString id;  // info.id, shared by the evaluations naming the rule
  int ref = LUA_NOREF;  // registry reference to check()
};

struct CompiledExtractor {
  ExtractorInfo info;
  int ref = LUA_NOREF;  // registry reference to extract()
};

struct CompiledPack {
  std::unique_ptr<Sandbox> sandbox;
  std::vector<CompiledRule> rules;  // priority descending, then id
  std::vector<CompiledExtractor> extractors;  // file order, then declaration order
  LedgerView view;
  CallView call_view;
  std::string loading_file;  // the file whose top level is running
};

// Creates a sandbox and runs `lua_files` (in the given order) in it. Errors:
// InvalidArgument for syntax errors, bad declarations and duplicate ids,
// LimitExceeded if the top level ran out of budget or memory.
Result<std::unique_ptr<CompiledPack>> CompilePack(const std::vector<const PackFile*>& lua_files,
                                                  const CheckerLimits& limits);

}  // namespace taskledger::policy_internal
