// ReplayTally: scores replayed conversations against the decisions the trace
// labels (`expect`), the numbers `taskledger replay` prints and a report
// script reads from its JSON summary.
//
// Scoring: a labeled `allow` is as expected when the gate allowed the call; a
// labeled `deny` is as expected when the gate did not let the call run
// (deny, and also confirm or require_approval, which hold it back); it has the
// right rule when, in addition, the deciding rule is the labeled one. Every
// labeled call that is not as expected, or not by the right rule, is a
// mismatch. A decision taken by a rule that failed (policy_error: the rule
// raised, ran out of budget or returned a bad value, and failed closed) is
// never credited: it is a mismatch of kind "policy_error" whatever the label,
// and every failed evaluation is counted, in total and per rule, labeled or
// not. Not thread-safe; merge tallies with Merge.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/session/replay.h"

namespace taskledger {

struct ReplayMismatch {
  std::string conversation;
  std::string call_id;
  std::string tool;
  std::string kind;  // "allowed_but_expected_deny", "blocked_but_expected_allow", "wrong_rule",
                     // "wrong_outcome", "policy_error"
  std::string expected_decision, expected_rule;
  std::string decision, rule, reason;
  uint64_t version_seen = 0;
};

class ReplayTally {
 public:
  void Add(const ConversationReplay& replay);
  // A trace line that could not be read or replayed.
  void AddFailedConversation() { ++failed_conversations_; }
  void Merge(const ReplayTally& other);

  uint64_t conversations() const { return conversations_; }
  uint64_t calls() const { return calls_; }
  uint64_t events() const { return events_; }
  uint64_t expected_allow() const { return expected_allow_; }
  uint64_t allowed_as_expected() const { return allowed_as_expected_; }
  uint64_t expected_deny() const { return expected_deny_; }
  uint64_t denied_as_expected() const { return denied_as_expected_; }
  uint64_t right_rule() const { return right_rule_; }
  uint64_t failed_conversations() const { return failed_conversations_; }
  // Rule evaluations that failed, and the calls that had at least one.
  uint64_t policy_errors() const { return policy_errors_; }
  uint64_t policy_error_calls() const { return policy_error_calls_; }
  const std::map<std::string, uint64_t>& policy_errors_by_rule() const {
    return policy_errors_by_rule_;
  }
  const std::vector<ReplayMismatch>& mismatches() const { return mismatches_; }
  bool all_as_expected() const { return mismatches_.empty(); }

  // {"conversations", "calls", "gated_calls", "events", "expected_allow",
  //  "allowed_as_expected", "expected_deny", "denied_as_expected", "right_rule",
  //  "failed_conversations", "policy_errors", "policy_error_calls",
  //  "policy_errors_by_rule": {"<rule>": n}, "decisions": {"allow": n, ...},
  //  "by_rule": {"<expected rule>": {"expected", "denied", "right_rule", "policy_errors"}},
  //  "deciding_rules": {"<rule>": {"<outcome>": n}},
  //  "rules": {"<rule>": {"evaluated", "passed", "held", "decided", "labeled",
  //                       "as_labeled", "policy_errors"}}, "mismatches": [...]}
  // In "rules", per rule of the pack that ran or was named by a label:
  // evaluated = calls it ran on, passed = of those it allowed, held = it said
  // deny, confirm or require_approval, decided = it was the deciding rule of
  // a call not allowed, labeled = calls labeled deny by it, as_labeled = of
  // those denied by it (not by an error), policy_errors = its evaluations that
  // failed.
  // (events_per_s is added by the caller, who knows the wall time.)
  nlohmann::json ToJson() const;

 private:
  struct RuleScore {
    uint64_t expected = 0, denied = 0, right_rule = 0, policy_errors = 0;
  };
  uint64_t conversations_ = 0, calls_ = 0, gated_calls_ = 0, events_ = 0;
  uint64_t expected_allow_ = 0, allowed_as_expected_ = 0;
  uint64_t expected_deny_ = 0, denied_as_expected_ = 0, right_rule_ = 0;
  uint64_t expected_other_ = 0, other_as_expected_ = 0;
  uint64_t failed_conversations_ = 0, extraction_errors_ = 0;
  uint64_t policy_errors_ = 0, policy_error_calls_ = 0;
  std::map<std::string, uint64_t> policy_errors_by_rule_;
  std::map<std::string, uint64_t> decisions_;
  std::map<std::string, RuleScore> by_rule_;
  struct RuleActivity {
    uint64_t evaluated = 0, passed = 0, held = 0;
  };
  std::map<std::string, RuleActivity, std::less<>> activity_;
  std::map<std::string, std::map<std::string, uint64_t>> deciding_rules_;
  std::vector<ReplayMismatch> mismatches_;
};

nlohmann::json EncodeMismatch(const ReplayMismatch& m);

}  // namespace taskledger
