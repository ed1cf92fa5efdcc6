// CommandStore's default ReserveAndLease: Reserve, then the lease as a second
// call; and its CommitReserveAndLease, which refuses (no commit to carry). The memory and Redis
// stores override it with one atomic step; this default serves other implementations (wrappers,
// test doubles) with the same outcome, only in two steps.
#include "taskledger/commands/command_store.h"

#include <algorithm>

namespace taskledger {

Result<ReserveResult> CommandStore::ReserveAndLease(const Command& initial,
                                                    const TransitionRequest& lease) {
  if (lease.transition != Transition::kLease) {
    return Status::InvalidArgument("ReserveAndLease needs a lease request");
  }
  auto reserved = Reserve(initial);
  if (!reserved) return reserved;
  const auto sources = TransitionSources(Transition::kLease);
  if (std::find(sources.begin(), sources.end(), reserved->command.state) == sources.end()) {
    return reserved;
  }
  TransitionRequest r = lease;
  r.run = initial.run;
  r.command_key = initial.command_key;
  auto leased = Apply(r);
  if (leased) return ReserveResult{std::move(leased).value(), reserved->created, true};
  if (leased.error().code() != StatusCode::kFailedPrecondition) return leased.error();
  // Someone else moved it first: report it as it is now.
  auto now = Get(initial.run, initial.command_key);
  if (!now) return now.error();
  return ReserveResult{std::move(now).value(), reserved->created, false};
}

Result<CommitReserveResult> CommandStore::CommitReserveAndLease(
    const EncodedCommit& /*commit*/, const Command& initial, const TransitionRequest& /*lease*/) {
  return Status::FailedPrecondition("the command store of run " + initial.run.run +
                                    " cannot carry a turn commit");
}

}  // namespace taskledger
