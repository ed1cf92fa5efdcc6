// RedisCommandStore's transitions (internal/command_redis_store_class.h):
// one FCALL per transition (Prepare), its reply applied to the command
// (Finish: a fenced transition of a command this store leased gets back only
// the fields it wrote), either at once (Apply) or sent now and read at
// PendingTransition::Wait (SendTransition, a session's deferred settle), and
// the next write's commit + reserve + lease sent right behind such a settle
// (CommitReserveAndLeaseBehind).
// Thread-safe, as the class; a PendingTransition is used by one thread.
#include <memory>
#include <optional>
#include <string>

#include "internal/command_redis_decode.h"
#include "internal/command_redis_functions.h"
#include "internal/command_redis_store_class.h"
#include "taskledger/commands/command_transition.h"

namespace taskledger::internal {

RedisCommandStore::Transit RedisCommandStore::Prepare(const TransitionRequest& r) {
  const std::shared_ptr<const CommandKeys> run_keys = KeysOf(r.run);
  Transit t;
  t.key = run_keys->Command(r.command_key);
  t.function = "tlc_" + std::string(TransitionName(r.transition));
  t.context = std::string(TransitionName(r.transition)) + " " + r.command_key;
  if (TransitionNeedsFencingToken(r.transition)) t.base = leased_.Take(t.key, r.fencing_token);
  t.keys = {t.key, run_keys->meta};
  t.args = {std::to_string(r.now_ms),
            std::to_string(r.fencing_token),
            r.owner,
            std::to_string(r.lease_ms),
            r.external_id,
            r.evidence.is_null() ? "" : Json(r.evidence),
            r.error,
            r.actor,
            r.reason,
            std::to_string(r.max_attempts),
            std::to_string(r.replay.max_attempts_per_command),
            std::to_string(r.replay.max_replays_per_run),
            std::to_string(r.replay.max_replays_per_window),
            std::to_string(r.replay.window_ms),
            t.base ? "delta" : ""};
  return t;
}

Result<Command> RedisCommandStore::Finish(Transit& t, Result<Reply> reply) {
  if (!reply) return reply.error();
  if (reply->is_error()) return CommandErrorToStatus(*reply, t.context);
  if (t.base) {
    if (Status s = ApplyHashFields(*reply, t.function, *t.base); !s.ok()) return s;
    leased_.Update(t.key, *t.base);
    return std::move(*t.base);
  }
  auto c = DecodeHash(*reply, t.function, &specs_);
  if (c) leased_.Update(t.key, *c);
  return c;
}

Result<Command> RedisCommandStore::Apply(const TransitionRequest& r) {
  Transit t = Prepare(r);
  Reply waited;
  auto reply = router_->FCall(CommandFunctionLibrary(), t.function, t.keys, t.args,
                              wait_.empty() ? nullptr : &wait_, &waited);
  if (reply && !wait_.empty() && !reply->is_error()) {
    if (Status s = Replicated(waited, t.context); !s.ok()) return s;
  }
  return Finish(t, std::move(reply));
}

namespace {

// A transition already answered (applied at once): its record or its error.
class AnsweredTransition final : public PendingTransition {
 public:
  explicit AnsweredTransition(Result<Command> result) {
    if (result) {
      command_ = std::move(result).value();
    } else {
      error_ = result.error();
    }
  }
  Result<Command> Wait() override {
    if (waited_) return Status::FailedPrecondition("the transition was read already");
    waited_ = true;
    if (!command_) return error_;
    return std::move(*command_);
  }

 private:
  std::optional<Command> command_;
  Status error_;
  bool waited_ = false;
};

}  // namespace

// A transition whose FCALL is on the wire; the reply is read by Wait() (or
// by the DeferredReply's destructor, and then dropped).
class SentTransition final : public PendingTransition {
 public:
  SentTransition(RedisCommandStore& store, RedisCommandStore::Transit transit, DeferredReply reply,
                 std::string target, std::string token)
      : store_(store),
        transit_(std::move(transit)),
        reply_(std::move(reply)),
        target_(std::move(target)),
        token_(std::move(token)) {}
  Result<Command> Wait() override {
    if (waited_) return Status::FailedPrecondition(transit_.context + " was read already");
    waited_ = true;
    return store_.Finish(transit_, reply_.Wait());
  }

  // Whether this store sent it and nobody has read it: an FCALL can go behind it.
  bool unread(const RedisCommandStore& store) const { return &store == &store_ && !waited_; }
  // ReserveIn's Behind for this transition: `send` reads this transition's
  // reply (into *result) and the reply of the FCALL it sends behind it.
  RedisCommandStore::Behind BehindIt(Result<Command>& result) {
    RedisCommandStore::Behind behind{transit_.key, target_, token_, nullptr};
    behind.send = [this, &result](const std::string& function, const std::vector<std::string>& keys,
                                  const std::vector<std::string>& args) {
      waited_ = true;
      auto both = reply_.WaitThen(function, keys, args);
      result = store_.Finish(transit_, std::move(both.first));
      return std::move(both.second);
    };
    return behind;
  }

 private:
  RedisCommandStore& store_;
  RedisCommandStore::Transit transit_;
  DeferredReply reply_;
  std::string target_, token_;  // the state it leads to, the token it was sent under
  bool waited_ = false;
};

std::unique_ptr<PendingTransition> RedisCommandStore::SendTransition(const TransitionRequest& r) {
  if (!wait_.empty()) return std::make_unique<AnsweredTransition>(Apply(r));
  Transit t = Prepare(r);
  DeferredReply reply = router_->SendFCall(CommandFunctionLibrary(), t.function, t.keys, t.args);
  return std::make_unique<SentTransition>(
      *this, std::move(t), std::move(reply),
      std::string(CommandStateName(TransitionTarget(r.transition))),
      std::to_string(r.fencing_token));
}

std::pair<Result<Command>, Result<CommitReserveResult>>
RedisCommandStore::CommitReserveAndLeaseBehind(std::unique_ptr<PendingTransition> before,
                                               const EncodedCommit& commit, const Command& initial,
                                               const TransitionRequest& lease) {
  auto* sent = dynamic_cast<SentTransition*>(before.get());
  if (sent == nullptr || !sent->unread(*this) || carrier_id_.empty()) {
    // Nothing to go behind: read it, and reserve only after a settle that landed.
    Result<Command> settled = before->Wait();
    if (!settled) {
      return {std::move(settled),
              Status::FailedPrecondition("the write before was not settled; " +
                                         initial.command_key + " was not reserved")};
    }
    return {std::move(settled), CommitReserveAndLease(commit, initial, lease)};
  }
  Result<Command> settled = Status::Internal("the settle was not read");
  const Behind behind = sent->BehindIt(settled);
  auto reserved = CommitReserveVia(commit, initial, lease, &behind);
  // A reserve refused before it was sent (its arguments, the run's index)
  // leaves the settle unread: read it now.
  if (sent->unread(*this)) settled = sent->Wait();
  return {std::move(settled), std::move(reserved)};
}

}  // namespace taskledger::internal
