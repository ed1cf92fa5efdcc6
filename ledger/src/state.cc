// Applying turns to a LedgerState and diffing two states: the pure core that
// both stores, the Ledger and every audit view share.
#include "taskledger/ledger/state.h"

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

bool Expired(const Entry& e, uint64_t version, int64_t now_ms) {
  return !e.LiveAt(version, now_ms);
}

}  // namespace

const Entry* LedgerState::FindLive(Category c, std::string_view key, int64_t now_ms) const {
  const auto& m = of(c);
  auto it = m.find(key);
  if (it == m.end() || !it->second.LiveAt(version, now_ms)) return nullptr;
  return &it->second;
}

size_t LedgerState::size() const {
  size_t n = 0;
  for (const auto& m : entries) n += m.size();
  return n;
}

Status ApplyUpdate(LedgerState& state, const Update& u, uint64_t turn, int64_t now_ms) {
  if (Status s = Validate(u); !s.ok()) return s;
  auto& map = state.of(u.category);
  switch (u.op) {
    case UpdateOp::kRemove:
      map.erase(u.key);
      return Status::Ok();
    case UpdateOp::kExpire: {
      auto it = map.find(u.key);
      if (it != map.end()) it->second.expires_at_turn = turn;
      return Status::Ok();
    }
    case UpdateOp::kSet:
      break;
  }
  auto it = map.find(u.key);
  bool evidence = it != map.end() && !u.provenance.verified && it->second.provenance.verified &&
                  it->second.LiveAt(turn, now_ms);
  // A claim that agrees with the evidence adds nothing, and must not demote
  // the entry from verified to claimed.
  if (evidence && it->second.value == u.value) return Status::Ok();
  if (evidence) {
    // A claim never silently overwrites evidence: keep the evidence and record
    // the disagreement where a policy can see it.
    Entry conflict;
    conflict.value = {{"claimed", u.value},
                      {"verified", it->second.value},
                      {"claimed_by", u.provenance.source_id}};
    conflict.provenance = u.provenance;
    conflict.provenance.turn = turn;
    state.of(Category::kCondition)[ConflictKey(u)] = std::move(conflict);
    return Status::Ok();
  }
  Entry e;
  e.value = u.value;
  e.provenance = u.provenance;
  e.provenance.turn = turn;
  if (u.expire_after_turns) e.expires_at_turn = turn + *u.expire_after_turns;
  e.expires_at_ms = u.expire_at_ms;
  map[u.key] = std::move(e);
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
  state.version = turn.turn;
  for (auto& map : state.entries) {
    std::erase_if(
        map, [&](const auto& kv) { return Expired(kv.second, turn.turn, turn.committed_at_ms); });
  }
  return Status::Ok();
}

StateDiff Diff(const LedgerState& from, const LedgerState& to, int64_t now_ms) {
  StateDiff d;
  for (Category c : kAllCategories) {
    const auto& a = from.of(c);
    const auto& b = to.of(c);
    auto live_a = [&](const Entry& e) { return e.LiveAt(from.version, now_ms); };
    auto live_b = [&](const Entry& e) { return e.LiveAt(to.version, now_ms); };
    for (const auto& [key, eb] : b) {
      if (!live_b(eb)) continue;
      auto it = a.find(key);
      if (it == a.end() || !live_a(it->second)) {
        d.added.push_back({c, key, std::nullopt, eb});
      } else if (it->second.value != eb.value ||
                 it->second.provenance.verified != eb.provenance.verified) {
        d.changed.push_back({c, key, it->second, eb});
      }
    }
    for (const auto& [key, ea] : a) {
      if (!live_a(ea)) continue;
      auto it = b.find(key);
      if (it == b.end() || !live_b(it->second)) d.removed.push_back({c, key, ea, std::nullopt});
    }
  }
  return d;
}

}  // namespace taskledger
