// CommandStore: the durable home of command records, run status and the
// execution journal. Two implementations pass the same contract suite
// (tests/commands/command_store_contract): NewMemoryCommandStore and
// OpenRedisCommandStore.
//
// Contract, for every implementation:
// - Reserve is unique per (run, command_key): reserving again returns the
//   existing record (created=false), never a second one.
// - ReserveAndLease is Reserve and, when the command is ready, its lease.
// - Apply runs one Transition atomically: every precondition of
//   ApplyTransition is checked before anything is written; a refused
//   transition changes nothing.
// - A journal position, once written, never changes: PutJournalEntry is
//   put-if-absent and returns what is stored.
// - Run status moves only along the edges the caller names (compare-and-set).
// - Errors are values: Unavailable/Timeout when the backend is unreachable.
// Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"
#include "taskledger/commands/command.h"
#include "taskledger/commands/command_transition.h"
#include "taskledger/ledger/store.h"

namespace taskledger {

enum class RunStatus { kRunning = 0, kCompensating, kCompensated, kFailed };
std::string_view RunStatusName(RunStatus s);  // "RUNNING", "COMPENSATING", ...
std::optional<RunStatus> ParseRunStatus(std::string_view name);

struct RunRecord {
  RunId run;
  RunStatus status = RunStatus::kRunning;  // a run never written is RUNNING
  std::string reason;                      // why it left RUNNING
  RunCounters counters;
  int64_t updated_ms = 0;
};

// One recorded non-deterministic result: an LLM completion, a tool result, a
// clock read or a random draw, at a position of the run's execution.
struct JournalEntry {
  uint64_t position = 0;
  std::string kind;          // "llm", "tool", "clock", "random"
  std::string request_hash;  // Sha256Hex of kind + canonical request
  nlohmann::json request;
  nlohmann::json value;
  bool operator==(const JournalEntry&) const = default;
};

struct ReserveResult {
  Command command;
  bool created = false;  // false: the same logical command already existed
  bool leased = false;   // ReserveAndLease took the lease (command is the leased record)
};

// CommitReserveAndLease's outcome: the reservation (leased only if the turn
// was committed as well) and the commit's (CarriedCommit: committed, a
// refusal of the commit, or neither: the command was not ready).
struct CommitReserveResult {
  ReserveResult reserve;
  CarriedCommit commit;
};

class CommandStore {
 public:
  virtual ~CommandStore() = default;

  // Inserts `initial` (from NewCommand; its seq is assigned here) unless the
  // run already holds its command_key, in which case the stored one is returned.
  virtual Result<ReserveResult> Reserve(const Command& initial) = 0;
  // Reserve, then, if the command (new or found) is pending or approved,
  // Apply(`lease`) to it (`lease.transition` must be kLease; its run and
  // command_key are taken from `initial`). Leased: leased=true and the leased
  // record. Found in any other state, or leased by someone else in between:
  // leased=false and the record as it is. Errors: Reserve's and the lease's
  // (InvalidArgument for a missing owner or duration). The stores do both in
  // one atomic step (Redis: one FCALL); this default makes two calls.
  virtual Result<ReserveResult> ReserveAndLease(const Command& initial,
                                                const TransitionRequest& lease);
  // Which ledger stores' commits this store can carry: those whose
  // Store::CommitCarrierId() is this same non-empty id (the same database).
  // Empty (the default): none.
  virtual std::string TurnCommitCarrierId() const { return {}; }
  // ReserveAndLease and a ledger turn commit (a session's write-ahead commit)
  // in one atomic step (Redis: one FCALL), the commit's key sharing the
  // run's hash tag. Every check first: the lease's arguments, the commit's
  // (refused: commit.refusal, nothing written), and whether the command is
  // ready (a lease source state and no operator approval to record first).
  // Not ready: leased=false, the record as it is, and nothing written (the
  // turn neither, unless a retry finds it had landed: commit.committed).
  // Else the turn, the reservation and the lease. `initial` must start in a
  // state the lease moves from (InvalidArgument). FailedPrecondition when
  // TurnCommitCarrierId() is empty.
  virtual Result<CommitReserveResult> CommitReserveAndLease(const EncodedCommit& commit,
                                                            const Command& initial,
                                                            const TransitionRequest& lease);
  // Applies one transition atomically and returns the record after it.
  // NotFound for an unknown command; see ApplyTransition for the other errors.
  virtual Result<Command> Apply(const TransitionRequest& request) = 0;
  virtual Result<Command> Get(const RunId& run, std::string_view command_key) = 0;
  // Every command of the run, in reservation order.
  virtual Result<std::vector<Command>> ListCommands(const RunId& run) = 0;
  // Runs of a tenant that hold at least one command, sorted.
  virtual Result<std::vector<std::string>> ListRuns(const std::string& tenant) = 0;

  virtual Result<RunRecord> GetRun(const RunId& run) = 0;
  // Sets the run's status to `to` if it is one of `from`; FailedPrecondition
  // (naming the current status) otherwise.
  virtual Result<RunRecord> SetRunStatus(const RunId& run, std::vector<RunStatus> from,
                                         RunStatus to, const std::string& reason,
                                         int64_t now_ms) = 0;

  // Writes `entry` at entry.position unless that position is taken; returns
  // the entry stored there (the caller compares it with its own).
  virtual Result<JournalEntry> PutJournalEntry(const RunId& run, const JournalEntry& entry) = 0;
  virtual Result<std::optional<JournalEntry>> GetJournalEntry(const RunId& run,
                                                              uint64_t position) = 0;

  // Deletes every command, counter and journal entry of the run.
  virtual Status DropRun(const RunId& run) = 0;
};

}  // namespace taskledger
