// Default implementations of the Store's convenience calls, for stores that
// have nothing faster to offer.
#include "taskledger/ledger/store.h"

#include "internal/catch_up.h"

namespace taskledger {

std::vector<Status> Store::CommitTurns(std::span<const CommitRequest> batch) {
  std::vector<Status> out;
  out.reserve(batch.size());
  for (const CommitRequest& r : batch) out.push_back(CommitTurn(r.id, *r.turn, *r.after));
  return out;
}

Status Store::CommitTakingTurn(const ConversationId& id, TurnRecord&& turn,
                               const LedgerState& after) {
  return CommitTurn(id, turn, after);
}

Result<bool> Store::CommitTurnVia(const ConversationId& id, const TurnRecord& /*turn*/,
                                  const LedgerState& /*after*/, const CommitCarrier& /*carrier*/) {
  return Status::FailedPrecondition("the store of " + id.tenant + "/" + id.conversation +
                                    " cannot hand its commits to a carrier");
}

Result<LedgerState> Store::ReadHead(const ConversationId& id) {
  auto head = Head(id);
  if (!head.has_value()) return head.error();
  return ReadVersion(id, head.value());
}

Result<HeadRead> Store::ReadHeadAfter(const ConversationId& id, const LedgerState& known,
                                      int64_t known_committed_at_ms) {
  auto whole = [&]() -> Result<HeadRead> {
    auto head = ReadHead(id);
    if (!head.has_value()) return head.error();
    return HeadRead{std::move(head.value()), 0};
  };
  if (known.version == 0 || known_committed_at_ms == 0) return whole();
  auto head = Head(id);
  if (!head.has_value()) return head.error();
  if (head.value() < known.version || head.value() - known.version > internal::CatchUpLimit(known))
    return whole();
  auto turns = ReadTurns(id, known.version, head.value());
  if (!turns.has_value()) {
    // A store without history (FailedPrecondition), or a conversation
    // dropped since Head (NotFound): the head says what there is.
    const StatusCode code = turns.error().code();
    if (code == StatusCode::kFailedPrecondition || code == StatusCode::kNotFound) return whole();
    return turns.error();
  }
  auto state = internal::CatchUp(known, known_committed_at_ms, turns.value());
  if (!state) return whole();
  const int64_t stamp = turns.value().back().committed_at_ms;
  return HeadRead{std::move(*state), stamp};
}

}  // namespace taskledger
