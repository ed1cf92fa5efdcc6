// The line `taskledger replay` prints for each gated call (see
// replay_decision.h): text, or one JSON object per line with --json.
#include "replay_decision.h"

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace taskledger::cli {
namespace {

// `text` as a JSON string, exactly as nlohmann's dump (no ASCII escaping,
// invalid UTF-8 replaced) writes it: printable ASCII with nothing to escape
// is written as it is; anything else goes through nlohmann.
void AppendJsonString(std::string& out, std::string_view text) {
  for (const char ch : text) {
    const auto b = static_cast<unsigned char>(ch);
    if (b < 0x20 || b >= 0x7f || ch == '"' || ch == '\\') {
      out += nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return;
    }
  }
  out += '"';
  out += text;
  out += '"';
}

// One --json decision line: the keys in nlohmann's (sorted) order, the same
// bytes as dumping the object, written without building it (the line is
// printed for every gated call).
void PrintDecisionJson(std::ostream& out, const std::string& conversation, const ReplayedCall& c) {
  std::string line;
  line.reserve(160 + c.reason.size());
  line += "{\"call_id\":";
  AppendJsonString(line, c.call_id);
  line += ",\"conversation\":";
  AppendJsonString(line, conversation);
  line += ",\"decision\":";
  AppendJsonString(line, OutcomeName(c.outcome));
  const bool errors = !c.errored_rules.empty() || c.policy_error;
  if (errors) {
    line += ",\"errored_rules\":[";
    for (size_t i = 0; i < c.errored_rules.size(); ++i) {
      if (i != 0) line += ',';
      AppendJsonString(line, c.errored_rules[i]);
    }
    line += ']';
  }
  line += c.executed ? ",\"executed\":true" : ",\"executed\":false";
  if (c.expect) {
    line += ",\"expect\":{\"decision\":";
    AppendJsonString(line, c.expect->decision);
    line += ",\"rule\":";
    AppendJsonString(line, c.expect->rule);
    line += '}';
  }
  if (errors) line += c.policy_error ? ",\"policy_error\":true" : ",\"policy_error\":false";
  line += ",\"reason\":";
  AppendJsonString(line, c.reason);
  line += ",\"rule\":";
  AppendJsonString(line, c.rule_id);
  line += ",\"tool\":";
  AppendJsonString(line, c.tool);
  line += ",\"version_seen\":";
  line += std::to_string(c.version_seen);
  line += "}\n";
  out << line;
}

}  // namespace

void PrintReplayDecision(std::ostream& out, bool quiet, bool json, const std::string& conversation,
                         const ReplayedCall& c) {
  if (quiet || c.read_only) return;
  std::string verdict;
  if (c.policy_error) {
    // Never "as expected": a broken rule fails closed whatever the label says.
    verdict = "POLICY ERROR: the deciding rule failed";
  } else if (c.expect) {
    bool blocked = c.outcome != Outcome::kAllow;
    bool as_expected = c.expect->decision == "allow" ? !blocked
                       : c.expect->decision == "deny"
                           ? blocked && (c.expect->rule.empty() || c.expect->rule == c.rule_id)
                           : OutcomeName(c.outcome) == c.expect->decision;
    verdict = as_expected ? "as expected" : "MISMATCH: expected " + c.expect->decision;
    if (!as_expected && !c.expect->rule.empty()) verdict += " by " + c.expect->rule;
  }
  if (json) {
    PrintDecisionJson(out, conversation, c);
    return;
  }
  out << conversation << " " << c.call_id << " " << c.tool << " -> " << OutcomeName(c.outcome);
  if (c.outcome == Outcome::kAllow) {
    // An allow has no single deciding rule: every applicable rule passed.
    out << (c.rules_evaluated == 0 ? " [no rule applies]"
            : c.rules_evaluated == 1
                ? " [1 rule passed]"
                : " [all " + std::to_string(c.rules_evaluated) + " rules passed]");
  } else if (!c.rule_id.empty()) {
    out << " [" << c.rule_id << "]";
  }
  out << " @v" << c.version_seen;
  if (!c.reason.empty()) out << ": " << c.reason;
  if (!verdict.empty()) out << " (" << verdict << ")";
  out << "\n";
}

}  // namespace taskledger::cli
