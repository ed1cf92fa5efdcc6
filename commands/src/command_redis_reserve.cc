// RedisCommandStore's reservations (internal/command_redis_store_class.h):
// ReserveIn, the one path of tlc_reserve2, tlc_reserve_lease2 and
// tlc_commit_reserve_lease2 or 3 (the spec written straight from the Command, a
// typed decision kept apart as its CBOR and, with a commit, sent as a
// reference into the turn; the reply decoded without parsing the spec just
// sent), the FCALL that carries a turn commit, and the tenant's run index.
// Thread-safe, as the class.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "internal/command_redis_decode.h"
#include "internal/command_redis_functions.h"
#include "internal/command_redis_store_class.h"
#include "internal/command_spec_text.h"

namespace taskledger::internal {

Result<ReserveResult> RedisCommandStore::ReserveIn(const std::string& function,
                                                   const Command& initial,
                                                   const std::vector<std::string>& lease_args,
                                                   const EncodedCommit* commit,
                                                   CarriedCommit* carried, const Behind* behind) {
  const std::shared_ptr<const CommandKeys> keys = KeysOf(initial.run);
  const std::string hash = keys->Command(initial.command_key);
  // Indexed first: a crash after this line leaves an indexed run with no
  // command, which ListRuns callers see as empty (never a lost command).
  const bool known = IndexedBefore(initial.run);
  if (!known) {
    if (Status s = Index(initial.run); !s.ok()) return s;
  }
  // The spec as sent, compact and without a JSON tree. When that text reads
  // back exactly (`lossless`), a reply holding the same text and decision
  // (not another writer's earlier reservation) decodes to `initial` itself
  // instead of being parsed.
  std::string spec_text, decision;
  const bool apart = WriteDecisionApart(initial.decision, decision);
  const bool lossless = WriteCommandSpec(initial, SpecSpelling::kCompact, spec_text, apart);
  if (!lossless) {
    spec_text = Json(EncodeCommand(initial));  // the decision in it, replaced as the spec
    decision.clear();
  }
  std::vector<std::string> args, fkeys;
  const size_t spec_at = commit != nullptr ? 5 : 1;  // spec_text's place in args
  if (commit != nullptr) {
    args = {std::string(commit->base), std::string(commit->retention), std::string(commit->turn),
            std::string(commit->snapshot)};
    fkeys.emplace_back(commit->key);
  }
  args.insert(args.end(),
              {initial.command_key, std::move(spec_text),
               std::string(CommandStateName(initial.state)), std::to_string(initial.created_ms)});
  args.insert(args.end(), lease_args.begin(), lease_args.end());
  const size_t at =
      commit != nullptr && !decision.empty() ? commit->turn.find(decision) : std::string_view::npos;
  if (commit == nullptr) {
    args.push_back(decision);
  } else if (at == std::string_view::npos) {
    args.insert(args.end(), {decision, "", ""});
  } else {  // the turn holds these very bytes: refer to them
    args.insert(args.end(), {"", std::to_string(at), std::to_string(decision.size())});
  }
  fkeys.insert(fkeys.end(), {hash, keys->meta, keys->order});
  if (behind != nullptr) {
    fkeys.push_back(behind->key);
    args.insert(args.end(), {behind->state, behind->token});
  }
  // Last, so that a library loaded by an older process, which reads no
  // incarnation, ignores it (the conversation is then created without one).
  if (commit != nullptr) args.emplace_back(commit->incarnation);
  auto reply = commit == nullptr ? FCall(function, fkeys, args, "reserve " + initial.command_key)
                                 : CarryingFCall(function, fkeys, args, initial, *carried, behind);
  if (!reply) return reply.error();
  if (commit != nullptr && !carried->refusal.empty()) return ReserveResult{};
  const auto& e = reply->elements();
  const size_t size = commit != nullptr ? 4 : lease_args.empty() ? 2 : 3;
  if (e.size() != size || !e[0].is_integer() || (size >= 3 && !e[2].is_integer()) ||
      (size == 4 && !e[3].is_integer())) {
    return Status::Corruption("reserve: unexpected reply " + reply->Describe());
  }
  if (commit != nullptr) carried->committed = e[3].integer() > 0;
  const bool leased = size >= 3 && e[2].integer() == 1;
  const bool created = e[0].integer() == 1;
  bool sent = false;  // the reply's spec is the one sent
  Result<Command> c = Status::Internal("reserve: not decoded");
  if (created && leased) {
    // Written as sent, then leased: the reply holds the fields from state
    // on only (the spec and decision are those sent; stored verbatim).
    c = lossless ? Result<Command>(initial) : specs_.Decode(args[spec_at], decision);
    if (c) {
      if (Status s = ApplyHashFields(e[1], "reserve", *c); !s.ok()) return s;
    }
  } else {
    c = DecodeHash(e[1], "reserve",
                   [&](const std::string& spec, std::string_view stored) -> Result<Command> {
                     sent = lossless && spec == args[spec_at] && stored == decision;
                     return sent ? initial : specs_.Decode(spec, stored);
                   });
  }
  if (!c) return c.error();
  if (leased) {
    leased_.Update(hash, *c);
  } else {
    leased_.Forget(hash);
    // Its lease, if it comes, is a transition whose reply holds this spec.
    if (sent) specs_.Remember(args[spec_at], std::move(decision), initial);
  }
  if (known && c->seq == 1 && created) {
    // The run's first command, yet this process had indexed the run: it was
    // dropped (here or by another process) since. Index it again; a crash
    // before this line leaves a run DropRun had already taken out of the index.
    if (Status s = Index(initial.run); !s.ok()) return s;
  }
  return ReserveResult{std::move(c).value(), created, leased};
}

Result<Reply> RedisCommandStore::CarryingFCall(const std::string& function,
                                               const std::vector<std::string>& keys,
                                               const std::vector<std::string>& args,
                                               const Command& initial, CarriedCommit& carried,
                                               const Behind* behind) {
  auto reply = behind != nullptr ? behind->send(function, keys, args)
                                 : router_->FCall(CommandFunctionLibrary(), function, keys, args,
                                                  nullptr, nullptr);
  if (!reply) return reply.error();
  if (!reply->is_error()) return reply;
  const std::string& text = reply->str();
  for (std::string_view refusal : {"TLCONFLICT ", "TLGONE", "TLCORRUPT ", "ERR tl_commit"}) {
    if (text.rfind(refusal, 0) == 0) {
      carried.refusal = text;
      return reply;
    }
  }
  return CommandErrorToStatus(*reply, "commit + reserve " + initial.command_key);
}

std::shared_ptr<const CommandKeys> RedisCommandStore::KeysOf(const RunId& run) {
  // Per thread, not per store: a session is one thread, so the threads of a
  // store many runs share (taskledger serve) each keep their own run's keys
  // without a lock; and the keys are the run's alone (KeysOfRun), whatever
  // the store.
  struct Last {
    RunId run;
    std::shared_ptr<const CommandKeys> keys;
  };
  thread_local Last last;
  if (!last.keys || last.run != run) {
    last.keys = std::make_shared<const CommandKeys>(KeysOfRun(run));
    last.run = run;
  }
  return last.keys;
}

bool RedisCommandStore::IndexedBefore(const RunId& run) {
  std::lock_guard<std::mutex> lock(indexed_mu_);
  return indexed_.count(IndexedName(run)) != 0;
}

Status RedisCommandStore::Index(const RunId& run) {
  auto added = Call({"SADD", RunsOfTenantKey(run.tenant), run.run}, "index run",
                    /*write=*/true);
  if (!added) return added.error();
  std::lock_guard<std::mutex> lock(indexed_mu_);
  if (indexed_.size() >= kMaxIndexed) indexed_.clear();
  indexed_.insert(IndexedName(run));
  return Status::Ok();
}

}  // namespace taskledger::internal
