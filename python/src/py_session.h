// The Python Session's C++ side, shared by session.cc (the loop) and
// ledger_view.cc (read access): the wrapped Session with what it must
// outlive, and the guard that keeps it to one call at a time.
//
// A PySession is used from any Python thread but by one call at a time: every
// entry point holds a Busy for its duration, and a second call while one is
// in flight (another thread, or a tool callable calling back into its own
// session) raises FailedPrecondition instead of racing.
#pragma once

#include <memory>
#include <mutex>

#include "convert.h"
#include "taskledger/commands/command_store.h"
#include "taskledger/ledger/store.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/session/session.h"

namespace taskledger::py {

struct PySession {
  std::shared_ptr<Store> store;                 // declared first: destroyed after the session
  std::shared_ptr<CommandStore> command_store;  // null unless writes go through commands
  std::shared_ptr<const RulePack> pack;
  std::unique_ptr<Session> session;
  std::mutex busy;
};

// What Session.ledger returns; keeps the session alive.
struct PyLedgerView {
  std::shared_ptr<PySession> s;
};

// Holds the session for one call.
class Busy {
 public:
  explicit Busy(PySession& s) : lock_(s.busy, std::try_to_lock) {
    if (!lock_.owns_lock()) {
      Raise(Status::FailedPrecondition(
          "this Session is already running a call: use one Session per thread, and do not call "
          "back into the session from inside a tool callable"));
    }
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace taskledger::py
