// Collection of command metrics from a store and their Prometheus rendering.
#include <string>

#include "taskledger/commands/command_metrics.h"

namespace taskledger {
namespace {

std::string AgeBucket(int64_t age_ms) {
  if (age_ms < 60'000) return "lt_1m";
  if (age_ms < 600'000) return "lt_10m";
  if (age_ms < 3'600'000) return "lt_1h";
  return "ge_1h";
}

// Label values escape backslash, double quote and newline (exposition format).
std::string Label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out.push_back(c);
  }
  return out;
}

}  // namespace

Result<CommandMetrics> CollectCommandMetrics(CommandStore& store, const std::string& tenant,
                                             int64_t now_ms) {
  auto runs = store.ListRuns(tenant);
  if (!runs) return runs.error();
  CommandMetrics m;
  m.runs = runs->size();
  for (const std::string& run : *runs) {
    auto commands = store.ListCommands(RunId{tenant, run});
    if (!commands) return commands.error();
    for (const Command& c : *commands) {
      ++m.total;
      ++m.by_status_tool_age[{std::string(CommandStateName(c.state)), c.call.tool,
                              AgeBucket(now_ms - c.updated_ms)}];
      if (c.state == CommandState::kUncertain) ++m.uncertain;
      if (c.state == CommandState::kLeased && now_ms >= c.lease_expires_ms) ++m.expired_leases;
      if (c.state == CommandState::kBlocked && c.escalated) ++m.escalated;
    }
  }
  return m;
}

std::string FormatPrometheus(const CommandMetrics& m, const std::string& tenant) {
  const std::string t = "tenant=\"" + Label(tenant) + "\"";
  std::string out;
  out += "# HELP taskledger_commands Commands by status, tool and time since last change.\n";
  out += "# TYPE taskledger_commands gauge\n";
  for (const auto& [key, count] : m.by_status_tool_age) {
    const auto& [status, tool, age] = key;
    out += "taskledger_commands{" + t + ",status=\"" + Label(status) + "\",tool=\"" + Label(tool) +
           "\",age=\"" + age + "\"} " + std::to_string(count) + "\n";
  }
  auto gauge = [&](const std::string& name, const std::string& help, uint64_t v) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " gauge\n";
    out += name + "{" + t + "} " + std::to_string(v) + "\n";
  };
  gauge("taskledger_commands_total", "Commands recorded.", m.total);
  gauge("taskledger_commands_uncertain", "Commands whose outcome is unknown.", m.uncertain);
  gauge("taskledger_commands_expired_leases", "Leased commands past their lease expiry.",
        m.expired_leases);
  gauge("taskledger_commands_escalated", "Commands escalated to a human.", m.escalated);
  gauge("taskledger_command_runs", "Runs holding commands.", m.runs);
  return out;
}

}  // namespace taskledger
