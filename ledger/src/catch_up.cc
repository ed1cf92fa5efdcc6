// Catching a held state up to the head (see internal/catch_up.h).
#include "internal/catch_up.h"

#include <algorithm>
#include <vector>

namespace taskledger::internal {
namespace {

// Whether `turn` is the turn that produced `known` (see CatchUp).
bool Produced(const TurnRecord& turn, const LedgerState& known, int64_t committed_at_ms) {
  if (committed_at_ms == 0 || turn.turn != known.version ||
      turn.committed_at_ms != committed_at_ms) {
    return false;
  }
  std::vector<const CallRecord*> last;  // known's calls of that turn, newest first
  known.calls.ForEachNewestFirst([&](const CallRecord& c) {
    if (c.turn != known.version) return false;
    last.push_back(&c);
    return true;
  });
  if (last.size() != turn.calls.size()) return false;
  for (size_t i = 0; i < last.size(); ++i) {
    if (!(*last[last.size() - 1 - i] == turn.calls[i])) return false;
  }
  for (const Update& u : turn.updates) {
    if (u.op != UpdateOp::kSet) continue;
    const Entry* e = known.of(u.category).get(u.key);
    if (e != nullptr && e->provenance.turn == known.version && e->value != u.value) return false;
  }
  return true;
}

}  // namespace

size_t CatchUpLimit(const LedgerState& known) {
  return std::max<size_t>(64, (known.size() + known.calls.size()) / 16);
}

std::optional<LedgerState> CatchUp(const LedgerState& known, int64_t known_committed_at_ms,
                                   std::span<const TurnRecord> turns) {
  if (turns.empty() || !Produced(turns[0], known, known_committed_at_ms)) return std::nullopt;
  LedgerState state = known;
  for (size_t i = 1; i < turns.size(); ++i) {
    if (!ApplyTurn(state, turns[i]).ok()) return std::nullopt;
  }
  return state;
}

}  // namespace taskledger::internal
