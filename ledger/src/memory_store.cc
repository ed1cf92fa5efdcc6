// MemoryStore: the embedded Store. Per conversation it keeps every turn
// record and every version's state. States are persistent values (see
// LedgerState): version N+1 shares all of version N but what its turn
// changed, so keeping them all costs memory in proportion to the changes,
// and reading any version is an O(1) copy. (`snapshot_every` is a Redis
// concern and is ignored here.)
// Retention is judged against the injected Clock on every access.
// NewHeadsOnlyMemoryStore keeps states[0] as the head only and no turns.
#include "taskledger/ledger/memory_store.h"

#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace taskledger {
namespace {

struct Conversation {
  std::vector<TurnRecord> turns;    // turns[i] produced version i+1 (none: heads only)
  std::vector<LedgerState> states;  // states[v] is version v; states[0] is empty
  uint64_t head_version = 0;        // heads only: states is {the head}
  uint64_t head() const { return head_version; }
  int64_t last_commit_ms = 0;
};

class MemoryStore final : public Store {
 public:
  MemoryStore(StoreOptions options, const Clock& clock, bool history)
      : options_(options), clock_(clock), history_(history) {
    if (options_.snapshot_every == 0) options_.snapshot_every = 1;
  }

  Status CommitTurn(const ConversationId& id, const TurnRecord& turn,
                    const LedgerState& after) override {
    return Append(id, turn, after);
  }

  // The record is kept as it is handed over: no copy of its updates, call
  // arguments and decisions (a replay commits thousands of them).
  Status CommitTakingTurn(const ConversationId& id, TurnRecord&& turn,
                          const LedgerState& after) override {
    return Append(id, std::move(turn), after);
  }

  Result<uint64_t> Head(const ConversationId& id) override {
    std::lock_guard lock(mu_);
    Conversation* c = Find(id);
    return c ? c->head() : uint64_t{0};
  }

  Result<LedgerState> ReadHead(const ConversationId& id) override {
    std::lock_guard lock(mu_);
    Conversation* c = Find(id);
    return c ? c->states.back() : LedgerState{};
  }

  Result<LedgerState> ReadVersion(const ConversationId& id, uint64_t version) override {
    std::lock_guard lock(mu_);
    Conversation* c = Find(id);
    uint64_t head = c ? c->head() : 0;
    if (version > head) return NotFound(id, version, head);
    if (version == 0) return LedgerState{};
    if (version == head) return c->states.back();
    if (!history_) return NoHistory(id);
    return c->states[version];
  }

  Result<std::vector<TurnRecord>> ReadTurns(const ConversationId& id, uint64_t first,
                                            uint64_t last) override {
    std::lock_guard lock(mu_);
    Conversation* c = Find(id);
    uint64_t head = c ? c->head() : 0;
    if (last > head) return NotFound(id, last, head);
    std::vector<TurnRecord> out;
    if (!history_ && std::max<uint64_t>(first, 1) <= last) return NoHistory(id);
    for (uint64_t v = std::max<uint64_t>(first, 1); v <= last; ++v) out.push_back(c->turns[v - 1]);
    return out;
  }

  Result<std::vector<std::string>> ListConversations(const std::string& tenant) override {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (auto it = conversations_.lower_bound(ConversationId{tenant, ""});
         it != conversations_.end() && it->first.tenant == tenant;) {
      auto next = std::next(it);
      if (Find(it->first)) out.push_back(it->first.conversation);
      it = next;
    }
    return out;
  }

  Status DropConversation(const ConversationId& id) override {
    std::lock_guard lock(mu_);
    conversations_.erase(id);
    return Status::Ok();
  }

 private:
  // Appends turn N+1 on top of version N, or changes nothing (then `turn`
  // is untouched, whichever way it was passed).
  template <typename Record>
  Status Append(const ConversationId& id, Record&& turn, const LedgerState& after) {
    if (turn.turn == 0 || after.version != turn.turn) {
      return Status::InvalidArgument("commit: the state after the turn must carry its version");
    }
    std::lock_guard lock(mu_);
    Conversation* c = Find(id);
    uint64_t head = c ? c->head() : 0;
    if (turn.turn != head + 1) {
      return Status::Conflict("conversation '" + id.conversation + "' is at version " +
                              std::to_string(head) + "; this turn was built on version " +
                              std::to_string(turn.turn - 1));
    }
    if (!c) {
      c = &conversations_[id];
      c->states.emplace_back();
    }
    if (history_) {
      c->turns.push_back(std::forward<Record>(turn));
      c->states.push_back(after);
    } else {
      // The turn record is dropped here (its memory is reused by the next turn).
      c->states.back() = after;
    }
    c->head_version = after.version;
    c->last_commit_ms = clock_.NowMs();
    return Status::Ok();
  }

  // The live conversation, or nullptr; erases it if its retention ran out.
  Conversation* Find(const ConversationId& id) {
    auto it = conversations_.find(id);
    if (it == conversations_.end()) return nullptr;
    if (options_.retention &&
        clock_.NowMs() - it->second.last_commit_ms >=
            std::chrono::duration_cast<std::chrono::milliseconds>(*options_.retention).count()) {
      conversations_.erase(it);
      return nullptr;
    }
    return &it->second;
  }

  static Status NotFound(const ConversationId& id, uint64_t version, uint64_t head) {
    return Status::NotFound("conversation '" + id.conversation + "' has no version " +
                            std::to_string(version) + " (head is " + std::to_string(head) + ")");
  }

  static Status NoHistory(const ConversationId& id) {
    return Status::FailedPrecondition("conversation '" + id.conversation +
                                      "': this memory store keeps only the head version");
  }

  StoreOptions options_;
  const Clock& clock_;
  const bool history_;
  std::mutex mu_;
  std::map<ConversationId, Conversation> conversations_;
};

}  // namespace

std::unique_ptr<Store> NewMemoryStore(StoreOptions options, const Clock& clock) {
  return std::make_unique<MemoryStore>(options, clock, true);
}

std::unique_ptr<Store> NewHeadsOnlyMemoryStore(StoreOptions options, const Clock& clock) {
  return std::make_unique<MemoryStore>(options, clock, false);
}

}  // namespace taskledger
