// Redis key names of taskledger's stores: one hash tag per conversation, built from
// percent-encoded tenant and conversation ids so that no byte of an id
// (`}`, `{`, `:`, `*`, newline...) can reach another tenant's keys or turn a
// SCAN pattern into a wildcard. Layout and rationale: docs/redis-keys.md.
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "taskledger/base/conversation_id.h"

namespace taskledger::internal {

// Every byte outside [A-Za-z0-9._-] becomes %XX (upper-case hex).
std::string PercentEncodeKeyPart(std::string_view raw);
// The inverse; nullopt if `encoded` is not a valid encoding.
std::optional<std::string> PercentDecodeKeyPart(std::string_view encoded);

// "{<tenant>:<conversation>}", both parts encoded: the cluster hash tag all
// keys of one conversation share (so a multi-key transaction runs on one slot).
// Other stores (the command ledger) reuse it for their per-conversation keys.
std::string ConversationHashTag(const ConversationId& id);

// The ledger's one key per conversation: the stream "tl:{<t>:<c>}:turns"
// whose entry 0-<v> holds version v (docs/redis-keys.md).
std::string TurnStreamKey(const ConversationId& id);

// "tl:{<tenant>:": the prefix of every ledger key of `tenant` (what a
// per-tenant ACL key pattern names).
std::string TenantKeyPrefix(std::string_view tenant);
// SCAN MATCH pattern for every turn stream of `tenant`.
std::string TenantStreamPattern(std::string_view tenant);
// The decoded conversation id of a turn stream key of `tenant`, or nullopt
// if the key is not one.
std::optional<std::string> ConversationOfStreamKey(std::string_view key, std::string_view tenant);

}  // namespace taskledger::internal
