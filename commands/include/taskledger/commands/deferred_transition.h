// Deferred transitions: a command-store transition sent now whose result is
// read later. A Session settles a write this way (session.h, "Deferred
// settle"): the settle goes out as soon as the executor returns and its reply
// is read at the session's next store operation, so a write awaits one round
// trip instead of two. The next write's commit, reserve and lease can go out
// right behind an unread settle (CommitReserveAndLeaseBehind), guarded by it,
// so back-to-back writes await one round trip each.
//
// A store that can pipeline transitions (RedisCommandStore) also implements
// DeferringCommandStore; one that cannot (MemoryCommandStore) does not, and
// the caller applies the transition at once (CommandStore::Apply). A crash
// between the send and the read leaves what a crash between the tool call and
// a synchronous settle leaves: the command leased, or settled if the server
// ran the transition; the startup guard (CommandLedger::Recover) finishes
// either. Not thread-safe per object.
#pragma once

#include <memory>
#include <utility>

#include "taskledger/base/status.h"
#include "taskledger/commands/command.h"
#include "taskledger/commands/command_store.h"
#include "taskledger/commands/command_transition.h"
#include "taskledger/commands/tool_binding.h"

namespace taskledger {

// A transition on its way: Wait() returns what CommandStore::Apply would have
// returned for it (the record after it, or its error: FailedPrecondition when
// fenced, Unavailable / Timeout when the connection broke with the reply
// outstanding: the transition may or may not have been applied). One Wait per
// object (a second: FailedPrecondition). Destroying it unread reads the reply
// first (and drops it): a destroyed transition was still sent. It uses the
// store that sent it (its connection): destroy or Wait() it before the store.
class PendingTransition {
 public:
  virtual ~PendingTransition() = default;
  virtual Result<Command> Wait() = 0;
};

// A CommandStore that can send a transition without waiting for its result.
class DeferringCommandStore {
 public:
  // Sends `request` (a fenced transition: kSucceed, kFail, kMarkUncertain,
  // kRenew, kUnlease) now; costs no wait for the server. A store that cannot
  // defer this request (a replica WAIT is configured, say) applies it at once
  // and returns it already answered. Errors come from Wait().
  virtual std::unique_ptr<PendingTransition> SendTransition(const TransitionRequest& request) = 0;

  // CommandStore::CommitReserveAndLease of a write, sent right behind
  // `before` (a settle SendTransition sent, not read yet) on its connection,
  // so that one wait answers both. Returns `before`'s result (what its Wait()
  // gives) and the reserve's. The reserve writes only if `before` landed (its
  // command in the state its transition leads to, under its fencing token):
  // otherwise nothing, the turn neither, and the reserve's result is
  // FailedPrecondition. A `before` answered already is read first.
  virtual std::pair<Result<Command>, Result<CommitReserveResult>> CommitReserveAndLeaseBehind(
      std::unique_ptr<PendingTransition> before, const EncodedCommit& commit,
      const Command& initial, const TransitionRequest& lease) = 0;

 protected:
  ~DeferringCommandStore() = default;
};

// The transition CommandLedger::RecordOutcome applies for `outcome` under
// the lease `leased` holds (run, key and fencing token from it; now_ms unset):
// kSucceed for a success with an external id and evidence, kFail for a
// failure, kMarkUncertain otherwise. Pure.
TransitionRequest OutcomeTransition(const Command& leased, const ToolOutcome& outcome);

}  // namespace taskledger
