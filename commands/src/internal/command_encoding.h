// Byte-level encodings shared by the command store implementations: the
// percent-encoding that keeps ids from forging key separators or hash tags,
// and the Redis key names of a run (all sharing the hash tag {tenant:run}).
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "taskledger/commands/command.h"

namespace taskledger::internal {

// The ledger's key-part encoding (redis_keys.h): keeps [A-Za-z0-9._-], every
// other byte becomes %XX, so ':', '|', '{', '}', '/' and '%' never appear raw.
std::string PercentEncode(std::string_view in);

// Redis keys of one run (docs/commands.md, "Key layout").
struct CommandKeys {
  std::string tag;      // {tenant:run}, the ledger's ConversationHashTag
  std::string meta;     // hash: run status, reason, counters, next seq
  std::string order;    // sorted set: command_key by seq
  std::string journal;  // hash: position -> journal entry JSON
  std::string Command(std::string_view command_key) const;
};
CommandKeys KeysOfRun(const RunId& run);
// Set of the tenant's runs (its own hash tag: it spans runs).
std::string RunsOfTenantKey(std::string_view tenant);

}  // namespace taskledger::internal
