// CommandMetrics: what an operator watches on the command ledger: command
// counts by status, tool and age, uncertain commands, expired leases and
// escalations, collected from a CommandStore for one tenant, and their
// Prometheus text exposition (for the CLI's metrics endpoint).
// Plain values and free functions; thread-safe as the store is.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "taskledger/commands/command_store.h"

namespace taskledger {

struct CommandMetrics {
  // (status, tool, age bucket) -> commands. Age is time since the last change:
  // "lt_1m", "lt_10m", "lt_1h", "ge_1h".
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> by_status_tool_age;
  uint64_t total = 0;
  uint64_t uncertain = 0;
  uint64_t expired_leases = 0;  // leased, lease past its expiry, no outcome
  uint64_t escalated = 0;       // blocked because recovery gave up
  uint64_t runs = 0;
};

// Scans every run of `tenant`; ages and expiry judged at now_ms.
Result<CommandMetrics> CollectCommandMetrics(CommandStore& store, const std::string& tenant,
                                             int64_t now_ms);

// Prometheus text format (version 0.0.4), metric names prefixed taskledger_commands.
std::string FormatPrometheus(const CommandMetrics& metrics, const std::string& tenant);

}  // namespace taskledger
