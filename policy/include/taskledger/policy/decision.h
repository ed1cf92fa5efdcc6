// PolicyDecision: the gate's answer for one proposed call, with everything an
// auditor needs to see why (every rule evaluated and what it said), and the
// decision-log record built from it.
//
// Plain value types and pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/base/shared_string.h"
#include "taskledger/base/tool_call.h"
#include "taskledger/ledger/decision_record.h"
#include "taskledger/pack/rule_pack.h"

namespace taskledger {

// Ordered by strength: a deny beats everything, approval beats confirmation,
// confirmation beats allow.
enum class Outcome { kAllow = 0, kConfirm = 1, kRequireApproval = 2, kDeny = 3 };
// "allow", "confirm", "require_approval", "deny".
std::string_view OutcomeName(Outcome o);
std::optional<Outcome> ParseOutcome(std::string_view name);

// What one rule said. `error` is true when the rule failed (error, budget,
// memory, bad return value): its outcome is then kDeny and `reason` reads
// "policy error in rule <id>: <message>". The rule id is shared with the
// checker (every decision names every rule; copying it allocates nothing).
struct RuleEvaluation {
  SharedString rule_id;
  Outcome outcome = Outcome::kDeny;
  std::string reason;
  bool error = false;
  // What the rule wrote with log(...) during this check (bounded; see
  // docs/rule-api.md). For the decision record and `policy check`, never the prompt.
  std::vector<std::string> log = {};
  // The ledger entries the rule looked up (through ledger.fact/identifier/
  // constraint/condition, entry, verified, confirmed, provenance, record,
  // each and find), each (category, key) once in first-read order, with the
  // evidence each had: what an auditor follows from the rule to the tool calls.
  // Filled by PolicyChecker::ResolveReads (the Session calls it for every check).
  std::vector<EntryRead> reads = {};
  bool operator==(const RuleEvaluation&) const = default;
};

// Reserved rule ids for decisions no pack rule made.
inline constexpr std::string_view kUnknownToolRule = "taskledger.unknown_tool";
inline constexpr std::string_view kCheckerErrorRule = "taskledger.checker";

struct PolicyDecision {
  Outcome outcome = Outcome::kDeny;
  // The deciding rule: the first deny, else the highest-priority rule with the
  // strongest outcome. Empty when no rule ran (read-only tool, or a write tool
  // no rule applies to, which is allowed).
  std::string rule_id;
  // For deny / require_approval: why, written for the model to act on; for
  // confirm: the question to put to the user; for allow: usually empty.
  std::string reason;
  std::vector<RuleEvaluation> rules;  // in evaluation order
  SharedString pack_version;
  ToolClass tool_class = ToolClass::kUnknown;
  // The tool matches the pack's "egress" list (RulePack::IsEgress): gated
  // like a write (tool_class kWrites) but it changes nothing to reconcile, so
  // the session never makes it a command. Worked out with tool_class, once
  // per tool name and checker; not part of the decision-log record.
  bool egress = false;
  int64_t latency_us = 0;  // wall time of the check
  // Which check of its PolicyChecker made it (PolicyChecker::ResolveReads); 0: none.
  uint64_t check_seq = 0;
  // For a decision other than allow: the provenance lookups the rules made
  // (call.sources & co., docs/rule-api.md "Provenance"): [{arg, value,
  // sources}], the evidence of where each argument came from. Else null.
  nlohmann::json provenance;

  bool allowed() const { return outcome == Outcome::kAllow; }
  // The tool is read-only (tool_class kReadOnly): allowed, no rule ran. Worked
  // out from tool_class, the one place a decision says whether its call
  // writes. (A field before 0.2: write `read_only()`, and set tool_class to
  // make a decision read-only; docs/migration-0.2.md.)
  bool read_only() const { return tool_class == ToolClass::kReadOnly; }
};

// What the caller knows that the checker does not: where the decision sits.
struct DecisionContext {
  std::string conversation;
  uint64_t turn = 0;          // the turn being built
  uint64_t version_seen = 0;  // committed version the ledger view was built on
  uint64_t staged_seen = 0;   // updates staged in the turn at decision time
};

// The typed decision-log record staged into the turn record (see
// docs/rule-api.md), with each rule's reads.
DecisionRecord MakeDecisionRecord(const PolicyDecision& d, const ProposedCall& call,
                                  const DecisionContext& ctx);

// MakeDecisionRecord encoded as JSON (codec.h EncodeDecision):
// {conversation, turn, version_seen, staged_seen, tool, call_id, args_hash,
//  rules: [{id, outcome, reason[, error][, log][, reads]}], decision, rule, reason,
//  pack_version, read_only, latency_us}
nlohmann::json DecisionLogRecord(const PolicyDecision& d, const ProposedCall& call,
                                 const DecisionContext& ctx);

}  // namespace taskledger
