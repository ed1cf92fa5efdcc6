// ReplayTally (see replay_tally.h).
#include "taskledger/session/replay_tally.h"

namespace taskledger {

void ReplayTally::Add(const ConversationReplay& replay) {
  ++conversations_;
  events_ += replay.events;
  extraction_errors_ += replay.extraction_errors;
  for (const ReplayedCall& c : replay.calls) {
    ++calls_;
    const std::string outcome(OutcomeName(c.outcome));
    if (!c.read_only) {
      ++gated_calls_;
      ++decisions_[outcome];
      ++deciding_rules_[c.rule_id.empty() ? "(none)" : c.rule_id][outcome];
    }
    for (const auto& [rule, said] : c.evaluations) {
      auto it = activity_.find(rule.view());
      if (it == activity_.end()) it = activity_.emplace(rule.str(), RuleActivity{}).first;
      ++it->second.evaluated;
      ++(said == Outcome::kAllow ? it->second.passed : it->second.held);
    }
    for (const std::string& rule : c.errored_rules) {
      ++policy_errors_;
      ++policy_errors_by_rule_[rule];
    }
    if (!c.errored_rules.empty() || c.policy_error) ++policy_error_calls_;
    if (!c.expect) continue;
    ReplayMismatch m;
    m.conversation = replay.conversation;
    m.call_id = c.call_id;
    m.tool = c.tool;
    m.expected_decision = c.expect->decision;
    m.expected_rule = c.expect->rule;
    m.decision = outcome;
    m.rule = c.rule_id;
    m.reason = c.reason;
    m.version_seen = c.version_seen;
    const bool allowed = c.outcome == Outcome::kAllow;
    if (c.expect->decision == "allow") {
      ++expected_allow_;
      if (allowed) {
        ++allowed_as_expected_;
      } else {
        m.kind = c.policy_error ? "policy_error" : "blocked_but_expected_allow";
        mismatches_.push_back(std::move(m));
      }
    } else if (c.expect->decision == "deny") {
      ++expected_deny_;
      RuleScore& score = by_rule_[c.expect->rule.empty() ? "(unlabeled)" : c.expect->rule];
      ++score.expected;
      if (allowed) {
        m.kind = "allowed_but_expected_deny";
        mismatches_.push_back(std::move(m));
        continue;
      }
      ++denied_as_expected_;
      ++score.denied;
      if (c.policy_error) {
        // Failed closed: the call was held back, but by a broken rule, which
        // is never the labeled rule doing its job.
        ++score.policy_errors;
        m.kind = "policy_error";
        mismatches_.push_back(std::move(m));
      } else if (c.expect->rule.empty() || c.expect->rule == c.rule_id) {
        ++right_rule_;
        ++score.right_rule;
      } else {
        m.kind = "wrong_rule";
        mismatches_.push_back(std::move(m));
      }
    } else {
      // require_approval / confirm: the outcome must match exactly.
      ++expected_other_;
      if (!c.policy_error && outcome == c.expect->decision &&
          (c.expect->rule.empty() || c.expect->rule == c.rule_id)) {
        ++other_as_expected_;
      } else {
        m.kind = c.policy_error ? "policy_error" : "wrong_outcome";
        mismatches_.push_back(std::move(m));
      }
    }
  }
}

void ReplayTally::Merge(const ReplayTally& o) {
  conversations_ += o.conversations_;
  calls_ += o.calls_;
  gated_calls_ += o.gated_calls_;
  events_ += o.events_;
  expected_allow_ += o.expected_allow_;
  allowed_as_expected_ += o.allowed_as_expected_;
  expected_deny_ += o.expected_deny_;
  denied_as_expected_ += o.denied_as_expected_;
  right_rule_ += o.right_rule_;
  expected_other_ += o.expected_other_;
  other_as_expected_ += o.other_as_expected_;
  failed_conversations_ += o.failed_conversations_;
  extraction_errors_ += o.extraction_errors_;
  policy_errors_ += o.policy_errors_;
  policy_error_calls_ += o.policy_error_calls_;
  for (const auto& [k, v] : o.policy_errors_by_rule_) policy_errors_by_rule_[k] += v;
  for (const auto& [k, v] : o.decisions_) decisions_[k] += v;
  for (const auto& [k, v] : o.by_rule_) {
    RuleScore& s = by_rule_[k];
    s.expected += v.expected;
    s.denied += v.denied;
    s.right_rule += v.right_rule;
    s.policy_errors += v.policy_errors;
  }
  for (const auto& [rule, a] : o.activity_) {
    RuleActivity& mine = activity_[rule];
    mine.evaluated += a.evaluated;
    mine.passed += a.passed;
    mine.held += a.held;
  }
  for (const auto& [rule, outcomes] : o.deciding_rules_) {
    for (const auto& [k, v] : outcomes) deciding_rules_[rule][k] += v;
  }
  mismatches_.insert(mismatches_.end(), o.mismatches_.begin(), o.mismatches_.end());
}

nlohmann::json EncodeMismatch(const ReplayMismatch& m) {
  return {{"conversation", m.conversation},
          {"call_id", m.call_id},
          {"tool", m.tool},
          {"kind", m.kind},
          {"expected_decision", m.expected_decision},
          {"expected_rule", m.expected_rule},
          {"decision", m.decision},
          {"rule", m.rule},
          {"reason", m.reason},
          {"version_seen", m.version_seen}};
}

nlohmann::json ReplayTally::ToJson() const {
  nlohmann::json by_rule = nlohmann::json::object();
  for (const auto& [rule, s] : by_rule_) {
    by_rule[rule] = {{"expected", s.expected},
                     {"denied", s.denied},
                     {"right_rule", s.right_rule},
                     {"policy_errors", s.policy_errors}};
  }
  nlohmann::json rules = nlohmann::json::object();
  auto row = [&rules](const std::string& rule) -> nlohmann::json& {
    nlohmann::json& r = rules[rule];
    if (r.is_null()) {
      r = {{"evaluated", 0}, {"passed", 0},     {"held", 0},         {"decided", 0},
           {"labeled", 0},   {"as_labeled", 0}, {"policy_errors", 0}};
    }
    return r;
  };
  for (const auto& [rule, a] : activity_) {
    nlohmann::json& r = row(rule);
    r["evaluated"] = a.evaluated;
    r["passed"] = a.passed;
    r["held"] = a.held;
  }
  for (const auto& [rule, outcomes] : deciding_rules_) {
    if (rule == "(none)") continue;
    uint64_t decided = 0;
    for (const auto& [outcome, n] : outcomes) {
      if (outcome != OutcomeName(Outcome::kAllow)) decided += n;
    }
    if (decided > 0) row(rule)["decided"] = decided;
  }
  for (const auto& [rule, s] : by_rule_) {
    nlohmann::json& r = row(rule);
    r["labeled"] = s.expected;
    r["as_labeled"] = s.right_rule;
  }
  for (const auto& [rule, n] : policy_errors_by_rule_) row(rule)["policy_errors"] = n;
  nlohmann::json mismatches = nlohmann::json::array();
  for (const ReplayMismatch& m : mismatches_) mismatches.push_back(EncodeMismatch(m));
  return {{"conversations", conversations_},
          {"calls", calls_},
          {"gated_calls", gated_calls_},
          {"events", events_},
          {"expected_allow", expected_allow_},
          {"allowed_as_expected", allowed_as_expected_},
          {"expected_deny", expected_deny_},
          {"denied_as_expected", denied_as_expected_},
          {"right_rule", right_rule_},
          {"expected_other", expected_other_},
          {"other_as_expected", other_as_expected_},
          {"failed_conversations", failed_conversations_},
          {"extraction_errors", extraction_errors_},
          {"policy_errors", policy_errors_},
          {"policy_error_calls", policy_error_calls_},
          {"policy_errors_by_rule", policy_errors_by_rule_},
          {"decisions", decisions_},
          {"by_rule", std::move(by_rule)},
          {"deciding_rules", deciding_rules_},
          {"rules", std::move(rules)},
          {"mismatches", std::move(mismatches)}};
}

}  // namespace taskledger
