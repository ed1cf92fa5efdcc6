// Session, the command-ledger half up to the lease: an environment-changing
// call the policy allowed (or sent for approval) becomes a reserved command
// carrying its decision record; an uncertain one is reconciled, one that may
// not run now is reported, an operator's approval is staged, the write-ahead
// commit is made (in the same store call as the reserve and lease when the
// stores share one Redis) and the command is leased. What runs the leased
// command and settles it is session_commands.cc.
#include <optional>
#include <string>
#include <utility>

#include "internal/session_commands.h"

namespace taskledger {
namespace {

using session_internal::OperatorApproved;

// What the command acts on: SessionCommandOptions::target_of, else the first
// string argument of a usual name.
std::string TargetOf(const SessionCommandOptions& options, const ProposedCall& call) {
  if (options.target_of) return options.target_of(call);
  for (const char* name : {"path", "destination", "uri", "url", "name", "id", "order_id"}) {
    auto it = call.arguments.find(name);
    if (it != call.arguments.end() && it->is_string()) return it->get<std::string>();
  }
  return {};
}

}  // namespace

std::optional<Command> Session::Commands::ReserveReady(Session& s, const ProposedCall& call,
                                                       CallResult& result, bool external) {
  // An allowed call reserves and leases in one store call (with the
  // write-ahead commit too, when the stores can: CommitReserveLease), which
  // goes right behind the previous write's settle when that is still unread;
  // anything else reads that settle first.
  const bool carried = result.decision.allowed() && CarriesCommit(s);
  Status settled = carried && s.commands_->deferring != nullptr ? Status::Ok() : Settle(s);
  if (!settled.ok()) {
    // Nothing of this call happened: it is denied as a call the store could
    // not record (whatever the settle's code: a fenced settle's Conflict is no
    // state conflict of this turn), the reason naming the unsettled write.
    s.DenyForStore(call, Status::Unavailable(settled.ToString()), result);
    s.StageCallRecord(call, true, "denied");
    return std::nullopt;
  }
  Commands& cmd = *s.commands_;
  cmd.BindLookup(call.tool);
  CommandSpec spec;
  spec.run = cmd.run;
  spec.step = cmd.options.step_of ? cmd.options.step_of(call) : std::string("call");
  spec.call = call;  // the gated call itself, as the adapter parsed it
  spec.target = TargetOf(cmd.options, call);
  // The record Check just staged, typed and shared (not re-encoded here).
  spec.decision = CommandDecision(s.last_record_);
  spec.pack_version = s.pack_->version();
  spec.requires_approval = result.decision.outcome == Outcome::kRequireApproval;
  // An approval request only reserves (it runs only if an operator approved
  // it already).
  auto reserved = [&]() -> Result<ReserveResult> {
    if (carried) return CommitReserveLease(s, call, spec);
    if (result.decision.allowed()) return cmd.ledger.ReserveAndLease(spec);
    auto only = cmd.ledger.Reserve(spec);
    if (!only) return only.error();
    return ReserveResult{std::move(only).value(), false, false};
  }();
  if (!reserved) {
    // Without its command the call does not run. A refusal changed nothing;
    // a store call whose answer was lost may have reserved and leased it
    // (and committed the turn): it never runs twice (session.h, "Deferred
    // settle").
    s.DenyForStore(call, reserved.error(), result);
    s.StageCallRecord(call, true, "denied");
    return std::nullopt;
  }
  Command c = std::move(reserved->command);
  if (reserved->leased)
    return carried ? std::optional<Command>(std::move(c))
                   : WriteAhead(s, call, std::move(c), result);
  if (external && c.state == CommandState::kLeased && ReservingCallId(c) == call.id) {
    // The same client proposing its own call again (its answer was lost):
    // the lease it was given still stands (in result.command).
    result.command = std::move(c);
    return std::nullopt;
  }
  if (c.state == CommandState::kUncertain) {
    // A retry of a call whose outcome is unknown: ask the system first.
    if (auto reconciled = cmd.ledger.Reconcile(c.run, c.command_key)) c = *reconciled;
  }
  const bool ready =
      OperatorApproved(c) || (c.state == CommandState::kPending && result.decision.allowed());
  if (!ready) {
    s.ReportCommand(call, c, result);
    return std::nullopt;
  }
  return LeaseReady(s, call, std::move(c), result);
}

bool Session::Commands::CarriesCommit(const Session& s) {
  const Commands& cmd = *s.commands_;
  if (!s.commit_before_write_) return false;
  // One hash tag for the turn stream and the run's keys: the session's own run.
  const ConversationId& id = s.ledger_->id();
  if (cmd.run.tenant != id.tenant || cmd.run.run != id.conversation) return false;
  const std::string carrier = cmd.store.TurnCommitCarrierId();
  return !carrier.empty() && carrier == s.ledger_->commit_carrier_id();
}

Result<ReserveResult> Session::Commands::CommitReserveLease(Session& s, const ProposedCall& call,
                                                            const CommandSpec& spec) {
  Commands& cmd = *s.commands_;
  const std::optional<Entry> confirmation = ConsumeForWrite(s, call);
  std::optional<ReserveResult> reserved;
  // The previous write's settle, if unread: the store call goes right
  // behind it (its guard writes nothing unless the settle landed), and one
  // wait answers both.
  std::optional<Unsettled> before = std::move(cmd.unsettled);
  cmd.unsettled.reset();
  std::optional<Result<Command>> settle;
  auto committed = s.ledger_->CommitVia([&](const EncodedCommit& commit) -> Result<CarriedCommit> {
    Result<CommitReserveResult> done = Status::Internal("no reserve");
    if (before && before->pending) {
      auto both = cmd.ledger.CommitReserveAndLeaseBehind(*cmd.deferring, std::move(before->pending),
                                                         commit, spec);
      settle.emplace(std::move(both.first));
      done = std::move(both.second);
      // Refused (the guard, or a store failure): when the settle did not
      // land either, that is the reason to give.
      if (!done && !*settle) return Status::Unavailable(settle->error().ToString());
    } else {
      done = cmd.ledger.CommitReserveAndLease(commit, spec);
    }
    if (!done) return done.error();
    if (done->commit.refusal.empty()) reserved = std::move(done->reserve);
    return std::move(done->commit);
  });
  if (before) {
    // Recorded as Settle records it (a settle that did not land is staged
    // as a command_unsettled error), after the commit.
    if (before->pending) settle.emplace(before->pending->Wait());
    Status settled = Settled(s, *before, std::move(*settle));
    if (!settled.ok() && !committed) committed = Status::Unavailable(settled.ToString());
  }
  if (committed && *committed) s.wrote_ahead_ = true;
  if (!committed || !reserved || !reserved->leased) {
    // The call does not run now (a store failure, a conflict, or a command
    // that is not ready), so the user's yes still stands.
    if (confirmation) s.RestoreConfirmation(*confirmation);
  }
  if (!committed) return committed.error();
  if (!reserved) return Status::Internal("commit + reserve of " + call.tool + " returned nothing");
  return std::move(reserved).value();
}

std::optional<Command> Session::Commands::LeaseReady(Session& s, const ProposedCall& call,
                                                     Command c, CallResult& result) {
  if (OperatorApproved(c)) s.StageApproval(call, c, result);
  std::optional<Entry> consumed;
  if (s.commit_before_write_ && !s.CommitBeforeWrite(call, result, &consumed)) {
    s.StageCallRecord(call, true, "denied");  // the command stays ready for a retry
    result.command = std::move(c);
    return std::nullopt;
  }
  return Lease(s, call, c, result, consumed);
}

std::optional<Command> Session::Commands::WriteAhead(Session& s, const ProposedCall& call,
                                                     Command leased, CallResult& result) {
  if (!leased.approver.empty()) s.StageApproval(call, leased, result);
  if (s.commit_before_write_ && !s.CommitBeforeWrite(call, result)) {
    // The call never started: give the lease back, so the command is ready
    // for a retry at once. If that fails too, the lease runs out and the
    // startup guard reconciles it (the lookup finds nothing: released).
    auto back = s.commands_->ledger.Unlease(leased);
    s.StageCallRecord(call, true, "denied");
    result.command = back ? std::move(back).value() : std::move(leased);
    return std::nullopt;
  }
  return leased;
}

std::optional<Command> Session::Commands::Lease(Session& s, const ProposedCall& call,
                                                const Command& c, CallResult& result,
                                                const std::optional<Entry>& consumed) {
  Commands& cmd = *s.commands_;
  auto leased = cmd.ledger.Lease(c.run, c.command_key);
  if (leased) return std::move(leased).value();
  // Another worker took it first (then report what it is now), or the store is down.
  auto now = cmd.store.Get(c.run, c.command_key);
  if (leased.error().code() == StatusCode::kFailedPrecondition && now.has_value()) {
    s.ReportCommand(call, *now, result);
  } else {
    // The call did not run, so the user's yes still stands for the retry.
    if (consumed) s.RestoreConfirmation(*consumed);
    s.DenyForStore(call, leased.error(), result);
    s.StageCallRecord(call, true, "denied");
    result.command = c;
  }
  return std::nullopt;
}

}  // namespace taskledger
