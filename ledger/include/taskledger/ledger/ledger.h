// Ledger: one conversation's task state as an agent loop uses it.
//
// It holds the head version read from the Store and the turn being built.
// Staged updates apply at once to the working state (so a policy check later in
// the same turn sees the user's "yes"), and reach the store only on Commit,
// atomically, in one store call. If another writer committed first, Commit
// returns Conflict and keeps the staged turn; Rebase() reloads the head and
// re-applies it, so nothing is lost.
//
// Not thread-safe: one Ledger per conversation per thread. Any number of
// Ledgers over one Store are fine.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "taskledger/base/clock.h"
#include "taskledger/ledger/state.h"
#include "taskledger/ledger/store.h"

namespace taskledger {

class Ledger {
 public:
  // Reads the head state of `id` from `store` (which must outlive the Ledger).
  static Result<std::unique_ptr<Ledger>> Open(Store& store, ConversationId id,
                                              const Clock& clock = SystemClock());
  // Open, for a caller that still holds a head of `id` an earlier Ledger had
  // (its known_head()): reads only the turns committed since, when the store
  // can vouch for that head (Store::ReadHeadAfter).
  static Result<std::unique_ptr<Ledger>> Open(Store& store, ConversationId id, const Clock& clock,
                                              const HeadRead& known);

  const ConversationId& id() const { return id_; }
  // The last committed version.
  uint64_t version() const { return head_.version; }
  // The turn being built: version() + 1.
  uint64_t turn() const { return head_.version + 1; }
  // The committed head state.
  const LedgerState& head() const { return head_; }
  // head(), the turn that produced it and the incarnation of the
  // conversation it was read in, as far as the store told (HeadRead): what a
  // later Ledger::Open or Rebase catches up from.
  HeadRead known_head() const { return HeadRead{head_, head_turn_, head_incarnation_}; }
  // Whether Open(..., known) caught up from `known` (HeadRead::extends_known):
  // the versions up to known's are the ones its holder had.
  bool opened_from_known() const { return opened_from_known_; }
  // Head plus everything staged in the current turn; what policies see.
  const LedgerState& working() const { return working_; }
  // Number of updates staged in the current turn (with version(), it names
  // exactly what a decision saw).
  size_t staged_updates() const { return pending_.updates.size(); }
  // Changes every time working() changes; lets readers cache derived views.
  uint64_t generation() const { return generation_; }
  const Clock& clock() const { return clock_; }

  // Stages one update (its provenance.turn is set to turn()). InvalidArgument
  // for an empty key; the working state is unchanged then.
  Status Stage(Update u);
  // Stages a batch atomically: all or none.
  Status StageAll(std::vector<Update> updates);
  void StageCall(CallRecord call);
  void StageDecision(DecisionRecord decision);
  void StageError(ExtractionError error);
  // A provenance source (a user message or tool output the session's index
  // was given), committed with the turn; a turn holding one is pending.
  void StageSource(SourceRecord source);
  // 0.1's form, kept for one release: any JSON value, read as
  // DecodeExtractionError reads a stored record (so it is stored unchanged).
  void StageError(const nlohmann::json& error);
  const TurnRecord& pending() const { return pending_; }
  bool has_pending() const;

  // Commits the staged turn as version()+1. On Conflict (another writer got
  // there first), Unavailable or Timeout the turn stays staged and may be
  // committed again (after Rebase() for a Conflict). A turn with nothing
  // staged is still committed: a turn happened.
  Result<uint64_t> Commit();
  // Commit(), with `carrier` sending the store's encoded commit inside an
  // atomic step of its own (Store::CommitTurnVia). The new version, or
  // nullopt when the carrier chose not to commit: the turn stays staged,
  // as after a failed Commit. FailedPrecondition unless
  // commit_carrier_id() is non-empty.
  Result<std::optional<uint64_t>> CommitVia(const CommitCarrier& carrier);
  // The store's Store::CommitCarrierId().
  std::string commit_carrier_id() const { return store_.CommitCarrierId(); }
  // Reloads the head from the store and re-applies the staged turn on top.
  // It reads only the turns other writers committed since the head it holds
  // when the store still holds the incarnation that head was read in
  // (Store::ReadHeadAfter); else the whole head.
  Status Rebase();
  // Discards the staged turn.
  void Abandon();

  // Reads a past version / diffs two versions (from the store).
  Result<LedgerState> At(uint64_t version) const;
  Result<StateDiff> DiffVersions(uint64_t from, uint64_t to) const;

 private:
  Ledger(Store& store, ConversationId id, const Clock& clock, HeadRead head);
  Status Reapply();
  // Stamps the staged turn and builds the state it commits.
  Result<LedgerState> Seal();
  // Installs the committed state `next`, produced by `turn` (null: not
  // kept), as the head.
  void Advance(LedgerState next, std::shared_ptr<const TurnRecord> turn);
  // Installs a head read from the store.
  void Install(HeadRead head);
  // Whether a commit keeps its turn as head_turn_ (see ledger.cc).
  bool KeepsTurns() const;

  Store& store_;
  ConversationId id_;
  const Clock& clock_;
  LedgerState head_;
  // The turn that produced head_ and the incarnation of the conversation
  // head_ was read in (HeadRead); null / empty when not known: what lets
  // Rebase read only the turns after head_.
  std::shared_ptr<const TurnRecord> head_turn_;
  std::string head_incarnation_;
  bool opened_from_known_ = false;  // opened_from_known()
  LedgerState working_;
  TurnRecord pending_;
  uint64_t generation_ = 0;
  // Whether a staged update's effect on working_ could depend on the wall
  // clock (a claim over an entry with a wall-clock expiry: ApplyUpdate's
  // evidence test). If not, working_ already is head_ with the turn applied,
  // and Commit only seals it; if so, Commit re-applies the turn at its commit
  // time, as the stores do.
  bool clock_dependent_ = false;
};

}  // namespace taskledger
