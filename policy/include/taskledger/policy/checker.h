// PolicyChecker: runs a rule pack's Lua rules for proposed tool calls, and its
// Lua extractors for tool outputs, in a sandboxed lua_State it owns.
//
// Thread safety: a PolicyChecker is NOT thread-safe and must never be shared
// between threads: create one per thread from the shared
// std::shared_ptr<const RulePack>. Checkers of different threads share
// nothing mutable, so a pack reload on one thread (SetPack) never disturbs a
// check in flight on another.
//
// Failure model: nothing throws. A rule that errors, exceeds its instruction
// budget, deadline or memory cap, or returns anything but a verdict fails
// CLOSED (deny, "policy error in rule <id>: ..."), and the next check on the
// same checker is healthy. See docs/rule-api.md for the sandbox.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"
#include "taskledger/base/tool_call.h"
#include "taskledger/ledger/state.h"
#include "taskledger/pack/limits.h"
#include "taskledger/pack/lua_extractors.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/call_class.h"
#include "taskledger/policy/decision.h"
#include "taskledger/provenance/index.h"

namespace taskledger {

// Identifies the ledger state a check sees, so the checker can reuse what it
// derived from it (the observed-value index) across checks. Two checks with
// equal non-empty keys MUST be given equal states; use the conversation id
// plus Ledger::generation(). An empty conversation disables reuse.
struct ViewKey {
  std::string conversation;
  uint64_t generation = 0;
  bool operator==(const ViewKey&) const = default;
};

class PolicyChecker : public LuaExtractors {
 public:
  // Creates a sandboxed lua_State and runs the pack's Lua in it. Errors:
  // InvalidArgument (the pack's Lua fails to load here: syntax, bad rule),
  // LimitExceeded (loading the pack ran out of budget or memory), Internal.
  static Result<std::unique_ptr<PolicyChecker>> Create(std::shared_ptr<const RulePack> pack,
                                                       CheckerLimits limits = {});
  ~PolicyChecker() override;
  PolicyChecker(const PolicyChecker&) = delete;
  PolicyChecker& operator=(const PolicyChecker&) = delete;

  // Switches to `pack`. A no-op if it has the version already loaded;
  // otherwise builds a fresh lua_State first and only swaps it in when the
  // new pack loaded, so on error the checker keeps working with the old pack.
  Status SetPack(std::shared_ptr<const RulePack> pack);
  const std::shared_ptr<const RulePack>& pack() const;

  // Decides `call` against `state` as of `now_ms` (Unix ms; wall-clock expiry
  // of entries is judged at this time). Read-only tools are allowed without
  // running any rule. Never fails: every error becomes a deny decision.
  PolicyDecision Check(const ProposedCall& call, const LedgerState& state, const ViewKey& key,
                       int64_t now_ms);

  // Fills each RuleEvaluation::reads of `d` with the evidence of the entries
  // the rule read. The check only notes (category, key) per read, so that
  // recording costs the check almost nothing; this resolves them against the
  // state the check saw (digests, provenance), which is why it must be given
  // that same state, unchanged, and be the decision of this checker's latest
  // Check (else FailedPrecondition and `d` is unchanged). A decision no rule
  // ran for has nothing to resolve (Ok).
  Status ResolveReads(PolicyDecision& d, const LedgerState& state);

  // How the loaded pack classes `tool`: the class and egress a Check of a
  // call of `tool` puts in its decision, from the same per-tool plan (glob
  // matching once per tool name; later answers are a lookup).
  CallClass ClassOf(const std::string& tool);

  // The provenance index rules ask through call.sources & co. (owned by the
  // caller, who keeps it alive while checks run; null: those functions raise).
  void SetProvenance(const provenance::ProvenanceIndex* index);

  // True if some extractor{} of the pack applies to `tool`.
  bool HasExtractors(std::string_view tool) const override;
  // Runs every extractor applying to call.tool over `output` (decoded JSON, or
  // a JSON string for a text output), each in its own budget. Updates carry
  // provenance {source tool, source_id "<tool>#<call id>", verified, rule_id =
  // extractor id, pack_version}; expire_seconds is resolved against now_ms.
  // Results are in extractor order (by file, then declaration order).
  std::vector<ExtractorRun> RunExtractors(const ProposedCall& call, const nlohmann::json& output,
                                          int64_t now_ms) override;
  bool HasUserExtractors() const override;
  // Runs every extractor declaring `user = true` over one user message: its
  // `extract(output, call)` gets the message text as `output` and nil as
  // `call`. Updates are claims: provenance {source user, source_id "user",
  // verified false, rule_id = extractor id, pack_version}. Otherwise as
  // RunExtractors (own budget each, results in extractor order).
  std::vector<ExtractorRun> RunUserExtractors(std::string_view text, int64_t now_ms) override;

  // Bytes the lua_State currently holds (diagnostics, tests).
  size_t memory_in_use() const;

 private:
  struct Impl;
  explicit PolicyChecker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace taskledger
