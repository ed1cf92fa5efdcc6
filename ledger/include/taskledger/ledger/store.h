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
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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

// A turn commit as a Redis-backed store sends it to its tl_commit function
// (docs/redis-keys.md, "Commit protocol"): the stream key, the base version,
// the retention in ms ("" for none), the turn record and the snapshot record
// ("" for none), and for a conversation's first turn on a store that records
// incarnations, the incarnation to store with it (field `i` of entry 0-1:
// docs/redis-keys.md, "Incarnations"; "" for none: a conversation created
// without one is always read whole, never caught up). The views live until
// the carrier returns.
struct EncodedCommit {
  std::string_view key, base, retention, turn, snapshot, incarnation;
};

// What a commit carrier reports once its call came back: whether the turn
// landed (at base + 1), or the commit step's refusal, the error reply text
// of tl_commit (TLCONFLICT <head>, TLGONE, TLCORRUPT ...). Neither: the
// carrier chose not to commit (nothing of the turn was written).
struct CarriedCommit {
  bool committed = false;
  std::string refusal;
};

// Sends an encoded commit inside a larger atomic step of the caller's own
// (the command ledger's commit + reserve + lease: one round trip). A failed
// Result (Unavailable, Timeout) means the outcome is unknown, as for a
// CommitTurn that failed so.
using CommitCarrier = std::function<Result<CarriedCommit>(const EncodedCommit&)>;

// A head state, the turn that produced it, and the incarnation of the
// conversation it was read in (see Store::ReadHeadAfter). `turn` null and
// `incarnation` empty: not known.
struct HeadRead {
  LedgerState state;
  std::shared_ptr<const TurnRecord> turn;
  std::string incarnation;
  // Set by ReadHeadAfter: true when this head was caught up from `known`
  // (known's state with the turns after it applied), so its versions up to
  // known's are the very ones the caller held; false when it was read whole.
  bool extends_known = false;
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
  // The head state for a caller that holds `known`: this conversation's state
  // at known.state.version, the turn that produced it and the incarnation it
  // was read in (an earlier HeadRead; what Ledger::Rebase holds). A
  // conversation dropped (or expired) and written again is another
  // incarnation. When the store still holds that incarnation and, at that
  // version, that very turn, only the turns after it are read and applied to
  // the held state, so catching up on another writer's few turns costs those
  // turns, not the whole state. Else, and when the turn or the incarnation is
  // not known or more turns are behind than a sixteenth of the held records
  // (at least 64: reading the head replays as many after its snapshot), the
  // whole head is read. The result carries its turn and incarnation when the
  // store has them. The default reads the whole head (ReadHead) and knows
  // neither; so does MemoryStore, whose head is an O(1) copy. RedisStore:
  // docs/redis-keys.md, "Incarnations".
  virtual Result<HeadRead> ReadHeadAfter(const ConversationId& id, const HeadRead& known);
  // Whether ReadHeadAfter can catch up at all (the store records
  // incarnations): a Ledger keeps its committed turns for it only then. The
  // default: false.
  virtual bool KeepsIncarnations() const { return false; }
  // The incarnation of `id` as a writer that just created it sees it: that of
  // the conversation whose turn 1 is `turn_one` (the turn the writer
  // committed), so the writer can catch up later without reading the head
  // whole once. Empty when the store has none, or its turn 1 is another (the
  // conversation was written again since). The default: empty, nothing read.
  virtual Result<std::string> IncarnationOf(const ConversationId& id, const TurnRecord& turn_one);
  // Turn records first..last inclusive (1-based versions); NotFound if last > head.
  virtual Result<std::vector<TurnRecord>> ReadTurns(const ConversationId& id, uint64_t first,
                                                    uint64_t last) = 0;
  // Conversations of a tenant with at least one committed turn, sorted.
  virtual Result<std::vector<std::string>> ListConversations(const std::string& tenant) = 0;
  // Deletes every record of a conversation.
  virtual Status DropConversation(const ConversationId& id) = 0;

  // Who can carry this store's commits: a CommandStore reporting the same
  // non-empty id (CommandStore::TurnCommitCarrierId) reaches the very same
  // database and may send them (CommitTurnVia). Empty (the default, and a
  // store that must wait for replicas): commit with CommitTurn only.
  virtual std::string CommitCarrierId() const { return {}; }
  // CommitTurn, with `carrier` sending the encoded commit. true: the turn
  // landed; false: the carrier chose not to commit, nothing was written.
  // Refusals as CommitTurn's (Conflict ...). FailedPrecondition when
  // CommitCarrierId() is empty.
  virtual Result<bool> CommitTurnVia(const ConversationId& id, const TurnRecord& turn,
                                     const LedgerState& after, const CommitCarrier& carrier);
};

struct StoreOptions {
  // RedisStore writes a full snapshot every `snapshot_every` turns while the
  // state holds under 512 records (entries plus recorded calls), so reading a
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
