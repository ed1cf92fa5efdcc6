// Ledger: the per-conversation working copy over a Store. See ledger.h for the
// staging / commit / rebase contract.
#include "taskledger/ledger/ledger.h"

namespace taskledger {
namespace {

// Whether applying `u` to `state` can give another result at another time:
// only a set over an entry with a wall-clock expiry, whose liveness decides
// ApplyUpdate's evidence test.
bool DependsOnClock(const LedgerState& state, const Update& u) {
  if (u.op != UpdateOp::kSet) return false;
  const Entry* old = state.of(u.category).get(u.key);
  return old != nullptr && old->expires_at_ms.has_value();
}

}  // namespace

Ledger::Ledger(Store& store, ConversationId id, const Clock& clock, HeadRead head)
    : store_(store),
      id_(std::move(id)),
      clock_(clock),
      head_(std::move(head.state)),
      head_turn_(std::move(head.turn)),
      head_incarnation_(std::move(head.incarnation)),
      working_(head_) {}

Result<std::unique_ptr<Ledger>> Ledger::Open(Store& store, ConversationId id, const Clock& clock) {
  // Nothing held yet: the whole head, with its turn and incarnation where the
  // store has them.
  return Open(store, std::move(id), clock, HeadRead{});
}

Result<std::unique_ptr<Ledger>> Ledger::Open(Store& store, ConversationId id, const Clock& clock,
                                             const HeadRead& known) {
  if (id.conversation.empty()) return Status::InvalidArgument("empty conversation id");
  auto head = store.ReadHeadAfter(id, known);
  if (!head.has_value()) return head.error();
  const bool extends = head->extends_known;
  std::unique_ptr<Ledger> ledger(new Ledger(store, std::move(id), clock, std::move(head.value())));
  ledger->opened_from_known_ = extends;
  return ledger;
}

bool Ledger::has_pending() const {
  return !pending_.updates.empty() || !pending_.calls.empty() || !pending_.decisions.empty() ||
         !pending_.errors.empty() || !pending_.sources.empty();
}

Status Ledger::Stage(Update u) {
  u.provenance.turn = turn();
  const bool clock_dependent = DependsOnClock(working_, u);
  if (Status s = ApplyUpdate(working_, u, turn(), clock_.NowMs()); !s.ok()) return s;
  clock_dependent_ = clock_dependent_ || clock_dependent;
  pending_.updates.push_back(std::move(u));
  ++generation_;
  return Status::Ok();
}

Status Ledger::StageAll(std::vector<Update> updates) {
  LedgerState next = working_;
  int64_t now = clock_.NowMs();
  bool clock_dependent = false;
  for (Update& u : updates) {
    u.provenance.turn = turn();
    clock_dependent = clock_dependent || DependsOnClock(next, u);
    if (Status s = ApplyUpdate(next, u, turn(), now); !s.ok()) return s;
  }
  working_ = std::move(next);
  clock_dependent_ = clock_dependent_ || clock_dependent;
  if (pending_.updates.empty()) {
    // Most turns stage one batch: it becomes the turn's list without moving
    // each (large) Update through a growing vector, and without the spare
    // room an extractor reserved, which a stored turn would keep.
    pending_.updates = std::move(updates);
    pending_.updates.shrink_to_fit();
  } else {
    pending_.updates.reserve(pending_.updates.size() + updates.size());
    for (Update& u : updates) pending_.updates.push_back(std::move(u));
  }
  ++generation_;
  return Status::Ok();
}

void Ledger::StageCall(CallRecord call) {
  call.turn = turn();
  working_.calls.push_back(call);
  pending_.calls.push_back(std::move(call));
  ++generation_;
}

void Ledger::StageDecision(DecisionRecord decision) {
  pending_.decisions.push_back(std::move(decision));
}

void Ledger::StageSource(SourceRecord source) { pending_.sources.push_back(std::move(source)); }

void Ledger::StageError(ExtractionError error) { pending_.errors.push_back(std::move(error)); }

void Ledger::StageError(const nlohmann::json& error) {
  pending_.errors.push_back(DecodeExtractionError(error));
}

Result<LedgerState> Ledger::Seal() {
  pending_.turn = turn();
  // Stamped once: a retry after a lost reply must carry the same bytes, so the
  // store can recognise that the first attempt already landed.
  if (pending_.committed_at_ms == 0) pending_.committed_at_ms = clock_.NowMs();
  LedgerState next = working_;
  if (clock_dependent_) {
    next = head_;
    if (Status s = ApplyTurn(next, pending_); !s.ok()) return s;
  } else {
    // working_ is head_ with this turn's updates and calls applied, in order
    // and with results that do not depend on the time they were staged at:
    // applying them again (ApplyTurn) would build the same state.
    SealTurn(next, pending_);
  }
  return next;
}

void Ledger::Advance(LedgerState next, std::shared_ptr<const TurnRecord> turn) {
  // A commit on version 0 created the conversation: a new incarnation, asked
  // of the store (one read, once per conversation: the incarnation whose
  // turn 1 is this one, so whose version 1 is this state). Any other commit
  // stays in the incarnation head_ was read in (had the conversation been
  // written again meanwhile, the store no longer shows that incarnation, and
  // the next Rebase reads the whole head).
  const bool created = head_.version == 0;
  head_ = std::move(next);
  head_turn_ = std::move(turn);
  if (created) {
    head_incarnation_.clear();
    if (head_turn_ != nullptr) {
      auto incarnation = store_.IncarnationOf(id_, *head_turn_);
      if (incarnation.has_value()) head_incarnation_ = std::move(incarnation.value());
    }
  }
  if (head_turn_ == nullptr) head_incarnation_.clear();
  working_ = head_;
  pending_ = TurnRecord{};
  clock_dependent_ = false;
  ++generation_;
}

void Ledger::Install(HeadRead head) {
  head_ = std::move(head.state);
  head_turn_ = std::move(head.turn);
  head_incarnation_ = std::move(head.incarnation);
}

// Whether the committed turn is kept for a later catch-up: when the store
// records incarnations and can vouch for this conversation's heads (it told
// an incarnation, or this turn creates the conversation). A store that
// cannot (the memory store) is not paid for it, not even a copy of turn 1.
bool Ledger::KeepsTurns() const {
  return store_.KeepsIncarnations() && (!head_incarnation_.empty() || head_.version == 0);
}

Result<uint64_t> Ledger::Commit() {
  auto next = Seal();
  if (!next) return next.error();
  // The record is the store's once it lands (the memory store keeps it
  // without a copy); a failed commit leaves pending_ as it was, for a retry.
  if (!KeepsTurns()) {
    if (Status s = store_.CommitTakingTurn(id_, std::move(pending_), *next); !s.ok()) return s;
    Advance(std::move(next).value(), nullptr);
    return head_.version;
  }
  // Kept as the head's turn: moved, not copied, and moved back on failure.
  auto kept = std::make_shared<TurnRecord>(std::move(pending_));
  if (Status s = store_.CommitTurn(id_, *kept, *next); !s.ok()) {
    pending_ = std::move(*kept);
    return s;
  }
  Advance(std::move(next).value(), std::move(kept));
  return head_.version;
}

Result<std::optional<uint64_t>> Ledger::CommitVia(const CommitCarrier& carrier) {
  auto next = Seal();
  if (!next) return next.error();
  auto landed = store_.CommitTurnVia(id_, pending_, *next, carrier);
  if (!landed) return landed.error();
  if (!*landed) return std::optional<uint64_t>();
  Advance(std::move(next).value(),
          KeepsTurns() ? std::make_shared<const TurnRecord>(std::move(pending_)) : nullptr);
  return std::optional<uint64_t>(head_.version);
}

Status Ledger::Rebase() {
  auto head = store_.ReadHeadAfter(id_, known_head());
  if (!head.has_value()) return head.error();
  Install(std::move(head.value()));
  return Reapply();
}

Status Ledger::Reapply() {
  pending_.committed_at_ms = 0;
  LedgerState next = head_;
  int64_t now = clock_.NowMs();
  clock_dependent_ = false;
  for (Update& u : pending_.updates) {
    u.provenance.turn = head_.version + 1;
    clock_dependent_ = clock_dependent_ || DependsOnClock(next, u);
    if (Status s = ApplyUpdate(next, u, head_.version + 1, now); !s.ok()) return s;
  }
  for (CallRecord& c : pending_.calls) {
    c.turn = head_.version + 1;
    next.calls.push_back(c);
  }
  working_ = std::move(next);
  ++generation_;
  return Status::Ok();
}

void Ledger::Abandon() {
  pending_ = TurnRecord{};
  working_ = head_;
  clock_dependent_ = false;
  ++generation_;
}

Result<LedgerState> Ledger::At(uint64_t version) const { return store_.ReadVersion(id_, version); }

Result<StateDiff> Ledger::DiffVersions(uint64_t from, uint64_t to) const {
  auto a = store_.ReadVersion(id_, from);
  if (!a.has_value()) return a.error();
  auto b = store_.ReadVersion(id_, to);
  if (!b.has_value()) return b.error();
  return Diff(a.value(), b.value(), clock_.NowMs());
}

}  // namespace taskledger
