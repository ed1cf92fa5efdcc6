// Store: the one seam between the ledger and its durable storage. Two
// implementations pass the same contract suite (tests/ledger/store_contract):
// MemoryStore, the embedded default, and RedisStore.
//
// Contract, for every implementation:
// - CommitTurn appends turn N+1 on top of version N atomically, or writes
//   nothing. The writer names the version it built on (turn.turn - 1); if the
//   head moved, the result is Conflict and nothing is overwritten.
// - Versions only go up; every committed version reads back exactly.
// - Tenants are separate namespaces: no id of tenant A reaches tenant B's data,
//   whatever bytes the ids contain.
// - Errors are values: a store that is down or slow yields Unavailable or
//   Timeout, never a crash and never a silently dropped turn.
// Implementations are thread-safe unless they say otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "taskledger/base/conversation_id.h"
#include "taskledger/base/status.h"
#include "taskledger/ledger/state.h"

namespace taskledger {

// One turn to commit: `after` is the state once `turn` is applied (the store
// may persist it as a full snapshot every few turns).
struct CommitRequest {
  ConversationId id;
  const TurnRecord* turn = nullptr;
  const LedgerState* after = nullptr;
};

class Store {
 public:
  virtual ~Store() = default;

  // REQUIRES: after.version == turn.turn, and `after` is the base version with `turn` applied.
  virtual Status CommitTurn(const ConversationId& id, const TurnRecord& turn,
                            const LedgerState& after) = 0;
  // CommitTurn for a caller that no longer needs `turn`: a store that keeps
  // records in memory takes its contents instead of copying them. On success
  // `turn` is left valid but unspecified; on any error it is unchanged, so the
  // caller can rebase and retry with it. The default copies (CommitTurn).
  virtual Status CommitTakingTurn(const ConversationId& id, TurnRecord&& turn,
                                  const LedgerState& after);
  // Commits many turns (normally of different conversations) as one batch: on
  // Redis one pipelined round trip. Each result is that request's own status.
  virtual std::vector<Status> CommitTurns(std::span<const CommitRequest> batch);

  // The latest committed version; 0 for a conversation never written.
  virtual Result<uint64_t> Head(const ConversationId& id) = 0;
  // The exact state at `version` (0 .. head). NotFound past the head.
  virtual Result<LedgerState> ReadVersion(const ConversationId& id, uint64_t version) = 0;
  // The head state in one call (what a reopened session resumes from).
  virtual Result<LedgerState> ReadHead(const ConversationId& id);
  // Turn records first..last inclusive (1-based versions); NotFound if last > head.
  virtual Result<std::vector<TurnRecord>> ReadTurns(const ConversationId& id, uint64_t first,
                                                    uint64_t last) = 0;
  // Conversations of a tenant with at least one committed turn, sorted.
  virtual Result<std::vector<std::string>> ListConversations(const std::string& tenant) = 0;
  // Deletes every record of a conversation.
  virtual Status DropConversation(const ConversationId& id) = 0;
};

struct StoreOptions {
  // RedisStore writes a full snapshot every `snapshot_every` turns while the
  // state holds under 2,048 records (entries plus recorded calls), so reading a
  // version costs one snapshot plus fewer than snapshot_every turn records; a
  // larger state doubles the stride with each doubling of its size (snapshot
  // cost per turn stays bounded; reading costs about one state's worth more).
  // MemoryStore keeps every version (structurally shared) and ignores it.
  uint32_t snapshot_every = 16;
  // If set, a conversation's records all expire together this long after its
  // last commit.
  std::optional<std::chrono::seconds> retention;
};

}  // namespace taskledger
