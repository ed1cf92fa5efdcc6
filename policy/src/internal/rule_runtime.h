// RuleRuntime: what one PolicyChecker runs rules in. A pack compiled into its
// own sandbox (pack/lua/compiled_pack.h) plus the rule API's `ledger` and
// `call` objects installed in that sandbox. Replacing the pack replaces the
// whole runtime. Not thread-safe: belongs to one checker, so one thread.
#pragma once

#include <memory>

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

// Compiles `pack`'s Lua with the views installed. Errors as lua::CompilePack.
Result<std::unique_ptr<RuleRuntime>> LoadRuleRuntime(const RulePack& pack,
                                                     const CheckerLimits& limits);

}  // namespace taskledger::policy_internal
