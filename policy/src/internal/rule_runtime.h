// RuleRuntime: what one PolicyChecker runs rules in. A pack compiled into its
// own sandbox (pack/lua/compiled_pack.h) plus the rule API's `ledger` and
// `call` objects installed in that sandbox. Replacing the pack replaces the
// whole runtime. Not thread-safe: belongs to one checker, so one thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "internal/call_view.h"
#include "internal/ledger_view.h"
#include "internal/provenance_view.h"
#include "internal/rule_log.h"
#include "taskledger/pack/limits.h"
#include "taskledger/pack/lua/compiled_pack.h"
#include "taskledger/pack/rule_pack.h"

namespace taskledger::policy_internal {

struct RuleRuntime {
  std::unique_ptr<lua::CompiledPack> compiled;
  LedgerView view;
  CallView call_view;
  ProvenanceView provenance;
  RuleLog log;
};

// The tool and argument names `pack` declares, for CallView to keep as Lua
// strings: exact tool names (no `*` or `?`) of pack.json's tool lists, of
// the rules' and extractors' `tools` and of extract.json's tools; argument
// names extract.json reads (`{@name}`) and the pack's Lua reads as
// `args.name`. In that order, possibly with repeats. Never fails.
std::vector<std::string> DeclaredNames(const RulePack& pack);

// Compiles `pack`'s Lua with the views installed. Errors as lua::CompilePack.
Result<std::unique_ptr<RuleRuntime>> LoadRuleRuntime(const RulePack& pack,
                                                     const CheckerLimits& limits);

}  // namespace taskledger::policy_internal
