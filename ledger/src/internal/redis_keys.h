// Redis key names of the ledger: one hash tag per conversation, built from
// percent-encoded tenant and conversation ids so that no byte of an id
// (`}`, `{`, `:`, `*`, newline...) can reach another tenant's keys or turn a
// SCAN pattern into a wildcard. Layout and rationale: docs/redis-keys.md.
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "taskledger/ledger/store.h"

namespace taskledger::internal {

// Every byte outside [A-Za-z0-9._-] becomes %XX (upper-case hex).
std::string PercentEncodeKeyPart(std::string_view raw);
// The inverse; nullopt if `encoded` is not a valid encoding.
std::optional<std::string> PercentDecodeKeyPart(std::string_view encoded);

// "{<tenant>:<conversation>}", both parts encoded: the cluster hash tag all
// keys of one conversation share (so multi-key functions run on one slot).
// Other stores (the command ledger) reuse it for their per-conversation keys.
std::string ConversationHashTag(const ConversationId& id);

// The ledger's keys of one conversation, in the order the Lua functions
// take them as KEYS[1..4].
struct LedgerKeys {
  std::string head;      // string: the latest committed version
  std::string turns;     // hash: version -> encoded TurnRecord
  std::string snaps;     // hash: version -> encoded LedgerState
  std::string snap_index;  // sorted set: snapshot versions (score = member)
};
LedgerKeys LedgerKeysFor(const ConversationId& id);

// SCAN MATCH pattern for every head key of `tenant`.
std::string TenantHeadPattern(std::string_view tenant);
// The decoded conversation id of a head key of `tenant`, or nullopt if the
// key is not one.
std::optional<std::string> ConversationOfHeadKey(std::string_view key, std::string_view tenant);

}  // namespace taskledger::internal
