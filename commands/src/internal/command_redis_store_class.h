// RedisCommandStore (internal): CommandStore on Redis 7. A command is one hash: its
// immutable part (spec: the JSON record at reservation; decision: a typed
// decision record's CBOR, the bytes its turn keeps, when not in the spec)
// plus one field per mutable attribute, which the transition functions read
// and write. Every
// change is one FCALL into "taskledger_commands" (command_redis_functions.cc).
// On a Redis Cluster each call goes to the primary of its key's slot (the
// RedisRouter follows redirects): a run's keys share one hash tag, and the
// tenant's run index is a key of its own (another slot, so it cannot join
// tlc_reserve's FCALL). The store remembers the runs it has indexed: a write
// pays the index's round trip once per run and process, not once per call.
// The write path avoids work per call: the spec text is written straight
// from the Command (WriteCommandSpec), a reply holding the spec
// just sent decodes to that Command without parsing (other specs go through
// SpecCache), hashes are decoded from the reply field by field,
// and a fenced transition of a command this store leased gets back only the
// fields it wrote, applied to the Command its lease left
// (LeasedHashes). Thread-safe: every call takes its own connection
// from the router's pools; the set of indexed runs, the spec cache and the
// leased commands have their own mutexes.
//
// The class is declared here and defined over three files:
// command_redis_store.cc (reads, runs, the journal, DropRun, the calls every
// path makes, OpenRedisCommandStore), command_redis_reserve.cc (reservations:
// reserve, reserve + lease, commit + reserve + lease, and the run index) and
// command_redis_transit.cc (transitions, applied at once or sent now and
// read later).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "internal/command_encoding.h"
#include "internal/command_redis_decode.h"
#include "taskledger/commands/command_store.h"
#include "taskledger/commands/deferred_transition.h"
#include "taskledger/commands/redis_command_store.h"
#include "taskledger/redis/client.h"
#include "taskledger/redis/router.h"

namespace taskledger::internal {

class SentTransition;

class RedisCommandStore final : public CommandStore, public DeferringCommandStore {
 public:
  RedisCommandStore(std::unique_ptr<RedisRouter> router, const RedisOptions& options)
      : router_(std::move(router)), replicas_(options.replicas) {
    if (replicas_ > 0) {
      wait_ = {"WAIT", std::to_string(replicas_), std::to_string(options.replica_timeout.count())};
    } else {
      carrier_id_ = "redis " + options.url;  // as RedisStore's CommitCarrierId
    }
  }

  std::string TurnCommitCarrierId() const override { return carrier_id_; }

  Result<CommitReserveResult> CommitReserveAndLease(const EncodedCommit& commit,
                                                    const Command& initial,
                                                    const TransitionRequest& lease) override;
  Result<ReserveResult> Reserve(const Command& initial) override;
  Result<ReserveResult> ReserveAndLease(const Command& initial,
                                        const TransitionRequest& lease) override;

  // A fenced transition of a command this store leased asks for the fields it
  // writes only and applies them to the command its lease left (LeasedHashes):
  // the reply then carries no spec. A full reply (a library that does not
  // answer deltas) applies the same way.
  Result<Command> Apply(const TransitionRequest& r) override;

  // Apply's FCALL sent now and read at Wait(); applied at once when a WAIT
  // for replicas must follow it (the wait is the point of such a store).
  std::unique_ptr<PendingTransition> SendTransition(const TransitionRequest& r) override;
  // tlc_commit_reserve_lease3 on the connection of a settle SendTransition
  // sent (command_redis_transit.cc); CommitReserveAndLease after any other.
  std::pair<Result<Command>, Result<CommitReserveResult>> CommitReserveAndLeaseBehind(
      std::unique_ptr<PendingTransition> before, const EncodedCommit& commit,
      const Command& initial, const TransitionRequest& lease) override;

  Result<Command> Get(const RunId& run, std::string_view command_key) override;
  Result<std::vector<Command>> ListCommands(const RunId& run) override;
  Result<std::vector<std::string>> ListRuns(const std::string& tenant) override;
  Result<RunRecord> GetRun(const RunId& run) override;
  Result<RunRecord> SetRunStatus(const RunId& run, std::vector<RunStatus> from, RunStatus to,
                                 const std::string& reason, int64_t now_ms) override;
  Result<JournalEntry> PutJournalEntry(const RunId& run, const JournalEntry& entry) override;
  Result<std::optional<JournalEntry>> GetJournalEntry(const RunId& run, uint64_t position) override;
  Status DropRun(const RunId& run) override;

 private:
  friend class SentTransition;

  // One transition's FCALL and what its reply is applied to.
  struct Transit {
    std::string key, function, context;
    std::vector<std::string> keys, args;
    std::optional<Command> base;  // the command as this store leased it, when fenced
  };

  // The settle a reserve's FCALL goes right behind, on the settle's
  // connection (tlc_commit_reserve_lease3's guard): its command's hash, the
  // state it leads to and its fencing token; `send` sends the FCALL behind
  // it and returns the FCALL's reply.
  struct Behind {
    std::string key, state, token;
    std::function<Result<Reply>(const std::string& function, const std::vector<std::string>& keys,
                                const std::vector<std::string>& args)>
        send;
  };

  static std::string Json(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }

  Transit Prepare(const TransitionRequest& r);
  // The record after transition `t` from its FCALL's reply.
  Result<Command> Finish(Transit& t, Result<Reply> reply);

  // tlc_reserve2 or tlc_reserve_lease2 (`lease_args` appended to the
  // reserve's), or with `commit` tlc_commit_reserve_lease2 (its key and
  // arguments first; the commit's outcome in *carried, a refusal of it is no
  // error here). A typed decision goes in the hash's own field as its CBOR
  // (WriteDecisionApart), and with a commit as a reference to the same bytes
  // inside the turn sent (one copy on the wire); any other stays in the spec.
  // With `behind` (and a commit): tlc_commit_reserve_lease3 behind that settle.
  Result<ReserveResult> ReserveIn(const std::string& function, const Command& initial,
                                  const std::vector<std::string>& lease_args,
                                  const EncodedCommit* commit = nullptr,
                                  CarriedCommit* carried = nullptr, const Behind* behind = nullptr);
  // CommitReserveAndLease's checks and call, behind a settle or not.
  Result<CommitReserveResult> CommitReserveVia(const EncodedCommit& commit, const Command& initial,
                                               const TransitionRequest& lease,
                                               const Behind* behind);

  // Runs this store has put into their tenant's index. Bounded: past
  // kMaxIndexed names it starts again (a forgotten run costs one SADD more).
  static constexpr size_t kMaxIndexed = 65536;

  static std::string IndexedName(const RunId& run) {
    return PercentEncode(run.tenant) + ":" + PercentEncode(run.run);
  }
  bool IndexedBefore(const RunId& run);
  Status Index(const RunId& run);

  // KeysOfRun(run), kept for the last run this thread asked about: a
  // session's writes name the same run every time, and its keys cost a
  // percent-encoding and four strings to build. No lock.
  static std::shared_ptr<const CommandKeys> KeysOf(const RunId& run);

  // REQUIRES: argv[1] is the (first) key. A `write` waits for replicas_
  // replicas (RedisOptions::replicas) like every FCall.
  Result<Reply> Call(const Argv& argv, const std::string& context, bool write = false);
  Status Replicated(const Reply& waited, const std::string& context) const;
  Result<Reply> FCall(const std::string& function, const std::vector<std::string>& keys,
                      const std::vector<std::string>& args, const std::string& context);
  // The FCALL of tlc_commit_reserve_lease2 (no replicas to wait for: only a
  // store without them carries commits): the commit's refusals (tl_commit's
  // error replies) go to carried.refusal, the reply stays a value.
  Result<Reply> CarryingFCall(const std::string& function, const std::vector<std::string>& keys,
                              const std::vector<std::string>& args, const Command& initial,
                              CarriedCommit& carried, const Behind* behind);

  std::unique_ptr<RedisRouter> router_;
  std::string carrier_id_;  // TurnCommitCarrierId()
  uint32_t replicas_;
  Argv wait_;  // WAIT replicas timeout; empty: no wait
  std::mutex indexed_mu_;
  std::set<std::string> indexed_;  // IndexedName of the runs indexed by this store
  SpecCache specs_;      // the last command spec decoded (a write's reserve, then its settle)
  LeasedHashes leased_;  // the commands this store leased, as their lease left them
};

}  // namespace taskledger::internal
