// The read half of RedisStore: a conversation's head, its state at a version,
// a range of its turns, and the conversations of a tenant, each read from the
// turn stream `tl:{t:c}:turns` (docs/redis-keys.md) with XREVRANGE / XRANGE /
// SCAN through the store's RedisRouter. Nothing here writes. Thread-safe as
// the router is: every call leases its own connections.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "taskledger/ledger/state.h"
#include "taskledger/ledger/store.h"
#include "taskledger/redis/client.h"
#include "taskledger/redis/router.h"

namespace taskledger::internal {

// "tenant/conversation", as the store names a conversation in its errors.
std::string DescribeConversation(const ConversationId& id);

// The head from an XREVRANGE key + - COUNT 1 reply (0 for an empty stream).
Result<uint64_t> HeadOfReply(const Reply& reply, const std::string& what);

// The conversation's head version (0 when it was never written).
Result<uint64_t> ReadStreamHead(RedisRouter& router, const ConversationId& id);

// The state at `version` (nullopt: the head): the newest snapshot at or below
// it and the turns after it, read newest first, `first_page` entries in the
// first page (the writers' snapshot_every), doubling up to 1024 after.
// NotFound for a version above the head; Corruption for a gap. With
// `turn`, also the turn that produced it (null for version 0). With
// `incarnation`, also the conversation's incarnation (field `i` of its first
// entry; empty when it has none: never written, or written before
// incarnations), read before the state, in the first page's round trip.
Result<LedgerState> ReadStreamState(RedisRouter& router, const ConversationId& id,
                                    std::optional<uint64_t> version, uint64_t first_page,
                                    std::shared_ptr<const TurnRecord>* turn = nullptr,
                                    std::string* incarnation = nullptr);

// Store::IncarnationOf: FCALL tl_since from version 1, one entry: its
// incarnation if that entry's turn is `turn_one`.
Result<std::string> StreamIncarnationOf(RedisRouter& router, const ConversationId& id,
                                        const TurnRecord& turn_one);

// The head caught up from `known` (Store::ReadHeadAfter) in one round trip:
// FCALL tl_since from known's version. nullopt when the caller must read the
// whole head instead: another (or no) incarnation, another turn at that
// version, more than max(64, known's records / 16) turns behind, turns that
// do not read back or apply, or an error reply (no such function, an ACL).
// `seen` (may be null) is set to the incarnation tl_since showed, when it
// answered: read before anything a whole read then reads, so it labels that
// read's state (nullopt when tl_since was not asked or did not answer).
Result<std::optional<HeadRead>> CatchUpStreamState(RedisRouter& router, const ConversationId& id,
                                                   const HeadRead& known,
                                                   std::optional<std::string>* seen = nullptr);

// Turns first..last (first clamped to 1); empty when first > last. NotFound
// when last is above the head; Corruption for a gap.
Result<std::vector<TurnRecord>> ReadStreamTurns(RedisRouter& router, const ConversationId& id,
                                                uint64_t first, uint64_t last);

// The names of the tenant's conversations, sorted, every primary scanned.
// The server's NOPERM when the caller's ACL excludes the tenant.
Result<std::vector<std::string>> ListStreamConversations(RedisRouter& router,
                                                         const std::string& tenant);

}  // namespace taskledger::internal
