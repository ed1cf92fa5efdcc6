// A turn writer for the cluster failover tests (redis_cluster_fault_test,
// redis_cluster_tls_fault_test): it commits turns while a primary dies and
// counts what an operator would ask about afterwards: retried errors and
// acknowledged turns the store no longer had.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include "ledger/store_backends.h"

namespace taskledger::testing {

struct Tally {
  uint64_t head = 0;       // the writer's idea of the head when it stopped
  int errors = 0;          // Unavailable / Timeout replies (retried)
  uint64_t lost = 0;       // acknowledged turns the store no longer had
  std::string last_error;  // for the report
};

// Commits turns 1..turns on `id`, pausing `pace` after each. A commit that
// failed (Unavailable, Timeout) is sent again with the very same bytes,
// which the store recognises if the first one had landed. A Conflict means
// the store's head is behind what was acknowledged (lost in a failover):
// counted, and the writer goes on from the store's head (a head it cannot
// read is an error, waited for like the others). No Catch macro here (worker
// thread).
inline Tally Drive(Store& store, const ConversationId& id, uint64_t turns,
                   std::chrono::steady_clock::time_point deadline,
                   std::chrono::milliseconds pace = std::chrono::milliseconds(0)) {
  constexpr int64_t kT0 = 1'700'000'000'000;
  Tally t;
  LedgerState head;
  while (head.version < turns && std::chrono::steady_clock::now() < deadline) {
    TurnRecord turn;
    turn.turn = head.version + 1;
    turn.committed_at_ms = kT0 + static_cast<int64_t>(turn.turn);
    turn.updates = {SetUpdate(Category::kFact, "k" + std::to_string(turn.turn), turn.turn)};
    turn.updates[0].provenance.turn = turn.turn;
    LedgerState after = head;
    if (!ApplyTurn(after, turn).ok()) break;
    Status s = store.CommitTurn(id, turn, after);
    if (s.ok()) {
      head = std::move(after);
      std::this_thread::sleep_for(pace);
      continue;
    }
    t.last_error = s.ToString();
    if (s.code() == StatusCode::kConflict) {
      auto stored = store.ReadHead(id);
      if (stored) {
        if (stored->version < head.version) t.lost += head.version - stored->version;
        head = std::move(stored).value();
        continue;
      }
    }
    ++t.errors;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  t.head = head.version;
  return t;
}

}  // namespace taskledger::testing
