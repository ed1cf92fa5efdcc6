// ReplayTally: scores replayed conversations against the decisions the trace
// labels (`expect`), the numbers `taskledger replay` prints and a report
// script reads from its JSON summary.
//
// Scoring: a labeled `allow` is as expected when the gate allowed the call; a
// labeled `deny` is as expected when the gate did not let the call run
// (deny, and also confirm or require_approval, which hold it back); it has the
// right rule when, in addition, the deciding rule is the labeled one. Every
// labeled call that is not as expected, or not by the right rule, is a
// mismatch. Not thread-safe; merge tallies with Merge.
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
                     // "wrong_outcome"
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
  const std::vector<ReplayMismatch>& mismatches() const { return mismatches_; }
  bool all_as_expected() const { return mismatches_.empty(); }

  // {"conversations", "calls", "gated_calls", "events", "expected_allow",
  //  "allowed_as_expected", "expected_deny", "denied_as_expected", "right_rule",
  //  "failed_conversations", "decisions": {"allow": n, ...},
  //  "by_rule": {"<expected rule>": {"expected", "denied", "right_rule"}},
  //  "deciding_rules": {"<rule>": {"<outcome>": n}}, "mismatches": [...]}
  // (events_per_s is added by the caller, who knows the wall time.)
  nlohmann::json ToJson() const;

 private:
  struct RuleScore {
    uint64_t expected = 0, denied = 0, right_rule = 0;
  };
  uint64_t conversations_ = 0, calls_ = 0, gated_calls_ = 0, events_ = 0;
  uint64_t expected_allow_ = 0, allowed_as_expected_ = 0;
  uint64_t expected_deny_ = 0, denied_as_expected_ = 0, right_rule_ = 0;
  uint64_t expected_other_ = 0, other_as_expected_ = 0;
  uint64_t failed_conversations_ = 0, extraction_errors_ = 0;
  std::map<std::string, uint64_t> decisions_;
  std::map<std::string, RuleScore> by_rule_;
  std::map<std::string, std::map<std::string, uint64_t>> deciding_rules_;
  std::vector<ReplayMismatch> mismatches_;
};

nlohmann::json EncodeMismatch(const ReplayMismatch& m);

}  // namespace taskledger
