// The text summary of `taskledger replay` (see replay_summary.h).
#include "replay_summary.h"

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <string>

namespace taskledger::cli {
namespace {

// One line per rule: what it did across the replay (ReplayTally's "rules").
void PrintRuleTable(const nlohmann::json& rules) {
  if (rules.empty()) return;
  size_t width = 4;
  for (const auto& [rule, _] : rules.items()) width = std::max(width, rule.size());
  const char* columns[] = {"evaluated", "passed",     "held",         "decided",
                           "labeled",   "as_labeled", "policy_errors"};
  std::cout << "\n" << std::left << std::setw(static_cast<int>(width)) << "rule";
  auto column_width = [](const char* c) {
    return static_cast<int>(std::max<size_t>(9, std::char_traits<char>::length(c)));
  };
  for (const char* c : columns) std::cout << "  " << std::right << std::setw(column_width(c)) << c;
  std::cout << "\n";
  for (const auto& [rule, row] : rules.items()) {
    std::cout << std::left << std::setw(static_cast<int>(width)) << rule;
    for (const char* c : columns) {
      std::cout << "  " << std::right << std::setw(column_width(c)) << row[c].get<uint64_t>();
    }
    std::cout << "\n";
  }
  std::cout << std::left;
}

}  // namespace

void PrintReplaySummary(const ReplayTally& t, double seconds, const std::string& prefix) {
  if (!prefix.empty()) std::cout << "stored under: " << prefix << "\n";
  std::cout << "conversations: " << t.conversations() << "  calls: " << t.calls()
            << "  events: " << t.events() << "  (" << static_cast<uint64_t>(t.events() / seconds)
            << " events/s)\n";
  std::cout << "expected allow: " << t.expected_allow() << "  allowed: " << t.allowed_as_expected()
            << "\n";
  std::cout << "expected deny:  " << t.expected_deny() << "  denied: " << t.denied_as_expected()
            << "  by the labeled rule: " << t.right_rule() << "\n";
  if (t.failed_conversations() > 0) {
    std::cout << "unreadable or failed conversations: " << t.failed_conversations() << "\n";
  }
  if (t.policy_errors() > 0) {
    std::cout << "policy errors: " << t.policy_errors() << " in " << t.policy_error_calls()
              << " calls (";
    const char* sep = "";
    for (const auto& [rule, n] : t.policy_errors_by_rule()) {
      std::cout << sep << rule << " x" << n;
      sep = ", ";
    }
    std::cout << ")\n";
  }
  std::cout << (t.all_as_expected() ? "all labeled decisions as expected\n"
                                    : std::to_string(t.mismatches().size()) + " mismatches\n");
  PrintRuleTable(t.ToJson()["rules"]);
}

}  // namespace taskledger::cli
