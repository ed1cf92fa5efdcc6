// RedisCommandStore's transitions (internal/command_redis_store_class.h):
// one FCALL per transition (Prepare), its reply applied to the command
// (Finish: a fenced transition of a command this store leased gets back only
// the fields it wrote), either at once (Apply) or sent now and read at
// PendingTransition::Wait (SendTransition, a session's deferred settle).
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
  SentTransition(RedisCommandStore& store, RedisCommandStore::Transit transit, DeferredReply reply)
      : store_(store), transit_(std::move(transit)), reply_(std::move(reply)) {}
  Result<Command> Wait() override {
    if (waited_) return Status::FailedPrecondition(transit_.context + " was read already");
    waited_ = true;
    return store_.Finish(transit_, reply_.Wait());
  }

 private:
  RedisCommandStore& store_;
  RedisCommandStore::Transit transit_;
  DeferredReply reply_;
  bool waited_ = false;
};

std::unique_ptr<PendingTransition> RedisCommandStore::SendTransition(const TransitionRequest& r) {
  if (!wait_.empty()) return std::make_unique<AnsweredTransition>(Apply(r));
  Transit t = Prepare(r);
  DeferredReply reply = router_->SendFCall(CommandFunctionLibrary(), t.function, t.keys, t.args);
  return std::make_unique<SentTransition>(*this, std::move(t), std::move(reply));
}

}  // namespace taskledger::internal
