// Applying turns to a LedgerState and diffing two states: the pure core that
// both stores, the Ledger and every audit view share.
#include "taskledger/ledger/state.h"

#include <algorithm>
#include <string>

namespace taskledger {
namespace {

Status Validate(const Update& u) {
  if (u.key.empty()) return Status::InvalidArgument("update with an empty key");
  if (u.op == UpdateOp::kSet && u.expire_after_turns && *u.expire_after_turns == 0) {
    return Status::InvalidArgument("update of '" + u.key + "': expire_after_turns must be >= 1");
  }
  return Status::Ok();
}

std::string ConflictKey(const Update& u) {
  return "conflict." + std::string(CategoryName(u.category)) + "." + u.key;
}

}  // namespace

const Entry* LedgerState::FindLive(Category c, std::string_view key, int64_t now_ms) const {
  const Entry* e = of(c).get(key);
  return e != nullptr && e->LiveAt(version, now_ms) ? e : nullptr;
}

size_t LedgerState::size() const {
  size_t n = 0;
  for (const auto& m : entries) n += m.size();
  return n;
}

Status ApplyUpdate(LedgerState& state, const Update& u, uint64_t turn, int64_t now_ms) {
  if (Status s = Validate(u); !s.ok()) return s;
  EntryMap& map = state.of(u.category);
  switch (u.op) {
    case UpdateOp::kRemove:
      map.erase(u.key);
      return Status::Ok();
    case UpdateOp::kExpire: {
      if (const Entry* old = map.get(u.key)) {
        Entry e = *old;
        e.expires_at_turn = turn;
        map.Set(u.key, std::move(e));
      }
      return Status::Ok();
    }
    case UpdateOp::kSet:
      break;
  }
  const Entry* old = map.get(u.key);
  bool evidence = old != nullptr && !u.provenance.verified && old->provenance.verified &&
                  old->LiveAt(turn, now_ms);
  // A claim that agrees with the evidence adds nothing, and must not demote
  // the entry from verified to claimed.
  if (evidence && old->value == u.value) return Status::Ok();
  if (evidence) {
    // A claim never silently overwrites evidence: keep the evidence and record
    // the disagreement where a policy can see it.
    Entry conflict;
    conflict.value = {
        {"claimed", u.value}, {"verified", old->value}, {"claimed_by", u.provenance.source_id}};
    conflict.provenance = u.provenance;
    conflict.provenance.turn = turn;
    state.of(Category::kCondition).Set(ConflictKey(u), std::move(conflict));
    return Status::Ok();
  }
  Entry e;
  e.value = u.value;
  e.provenance = u.provenance;
  e.provenance.turn = turn;
  if (u.expire_after_turns) e.expires_at_turn = turn + *u.expire_after_turns;
  e.expires_at_ms = u.expire_at_ms;
  map.Set(u.key, std::move(e));
  return Status::Ok();
}

Status ApplyTurn(LedgerState& state, const TurnRecord& turn) {
  if (turn.turn != state.version + 1) {
    return Status::FailedPrecondition("turn " + std::to_string(turn.turn) +
                                      " cannot follow version " + std::to_string(state.version));
  }
  for (const Update& u : turn.updates) {
    if (Status s = Validate(u); !s.ok()) return s;
  }
  // Validation passed, so no update below can fail: the turn applies whole.
  for (const Update& u : turn.updates) {
    (void)ApplyUpdate(state, u, turn.turn, turn.committed_at_ms);
  }
  for (const CallRecord& c : turn.calls) state.calls.push_back(c);
  SealTurn(state, turn);
  return Status::Ok();
}

void SealTurn(LedgerState& state, const TurnRecord& turn) {
  state.version = turn.turn;
  for (EntryMap& map : state.entries) map.EraseExpired(turn.turn, turn.committed_at_ms);
}

StateDiff Diff(const LedgerState& from, const LedgerState& to, int64_t now_ms) {
  StateDiff d;
  // A shared entry can only change liveness through a turn expiry between
  // the two versions; wall-clock expiry is judged at the same now_ms.
  const uint64_t turn_bound = std::max(from.version, to.version);
  for (Category c : kAllCategories) {
    EntryMap::ForEachDifference(from.of(c), to.of(c), turn_bound,
                                [&](const std::string& key, const Entry* ea, const Entry* eb) {
                                  bool live_a = ea != nullptr && ea->LiveAt(from.version, now_ms);
                                  bool live_b = eb != nullptr && eb->LiveAt(to.version, now_ms);
                                  if (live_b && !live_a) {
                                    d.added.push_back({c, key, std::nullopt, *eb});
                                  } else if (live_a && !live_b) {
                                    d.removed.push_back({c, key, *ea, std::nullopt});
                                  } else if (live_a && live_b &&
                                             (ea->value != eb->value ||
                                              ea->provenance.verified != eb->provenance.verified)) {
                                    d.changed.push_back({c, key, *ea, *eb});
                                  }
                                });
  }
  return d;
}

}  // namespace taskledger
