// PolicyChecker::Impl: the state one checker keeps between calls (its pack,
// the rule runtime the pack is compiled into, per-tool plans, what the last
// check saw), shared by checker.cc (deciding calls) and checker_extract.cc
// (running extractors). Not thread-safe: belongs to one PolicyChecker.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "internal/rule_runtime.h"
#include "taskledger/policy/checker.h"

namespace taskledger {

struct PolicyChecker::Impl {
  std::shared_ptr<const RulePack> pack;
  SharedString pack_version;  // pack->version(), shared by every decision
  CheckerLimits limits;
  std::unique_ptr<policy_internal::RuleRuntime> runtime;
  // What the pack says about one tool: its class, whether it is egress, and
  // the rules applying to it, in evaluation order. All depend only on the
  // (immutable) pack, so they are worked out (glob matching) once per tool name.
  struct ToolPlan {
    ToolClass tool_class = ToolClass::kUnknown;
    bool egress = false;
    std::vector<size_t> rules;
  };
  std::unordered_map<std::string, ToolPlan> plans;
  const provenance::ProvenanceIndex* provenance = nullptr;

  // The plan of `tool`, worked out on first use.
  const ToolPlan& PlanFor(const std::string& tool);

  void Decide(PolicyDecision& d, const ProposedCall& call, const LedgerState& state,
              const ViewKey& key, int64_t now_ms, std::chrono::steady_clock::time_point start);

  // The latest check whose rules ran: what ResolveReads may resolve.
  uint64_t check_seq = 0;
  const LedgerState* checked_state = nullptr;
  uint64_t checked_version = 0;
  int64_t checked_now_ms = 0;
};

}  // namespace taskledger
