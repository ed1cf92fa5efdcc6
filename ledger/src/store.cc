// Default implementations of the Store's convenience calls, for stores that
// have nothing faster to offer.
#include "taskledger/ledger/store.h"

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

Result<HeadRead> Store::ReadHeadAfter(const ConversationId& id, const HeadRead& /*known*/) {
  auto head = ReadHead(id);
  if (!head.has_value()) return head.error();
  return HeadRead{std::move(head.value()), nullptr, {}};
}

Result<std::string> Store::IncarnationOf(const ConversationId& /*id*/,
                                         const TurnRecord& /*turn_one*/) {
  return std::string();
}

}  // namespace taskledger
