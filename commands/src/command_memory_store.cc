// MemoryCommandStore: CommandStore in process memory. One mutex guards every
// run; each operation works on copies and installs them only when the
// transition succeeded, so a refused transition changes nothing.
#include <algorithm>
#include <map>
#include <mutex>

#include "taskledger/commands/memory_command_store.h"

namespace taskledger {
namespace {

struct RunData {
  RunRecord record;
  std::map<std::string, Command, std::less<>> commands;
  uint64_t next_seq = 1;
  std::map<uint64_t, JournalEntry> journal;
};

class MemoryCommandStore final : public CommandStore {
 public:
  Result<ReserveResult> Reserve(const Command& initial) override {
    std::lock_guard lock(mu_);
    RunData& run = RunOf(initial.run);
    if (auto it = run.commands.find(initial.command_key); it != run.commands.end()) {
      return ReserveResult{it->second, false};
    }
    Command c = initial;
    c.seq = run.next_seq++;
    run.commands.emplace(c.command_key, c);
    return ReserveResult{std::move(c), true};
  }

  Result<ReserveResult> ReserveAndLease(const Command& initial,
                                        const TransitionRequest& lease) override {
    if (lease.transition != Transition::kLease) {
      return Status::InvalidArgument("ReserveAndLease needs a lease request");
    }
    std::lock_guard lock(mu_);
    RunData& run = RunOf(initial.run);
    auto it = run.commands.find(initial.command_key);
    const bool created = it == run.commands.end();
    Command c = created ? initial : it->second;
    if (created) c.seq = run.next_seq;
    const auto sources = TransitionSources(Transition::kLease);
    bool leased = false;
    if (std::find(sources.begin(), sources.end(), c.state) != sources.end()) {
      TransitionRequest r = lease;
      r.run = initial.run;
      r.command_key = initial.command_key;
      // Only the run's counters of this run; a lease does not change them.
      RunCounters counters = run.record.counters;
      if (Status s = ApplyTransition(c, counters, r); !s.ok()) return s;
      leased = true;
    }
    if (created) ++run.next_seq;
    if (created || leased) run.commands.insert_or_assign(c.command_key, c);
    return ReserveResult{std::move(c), created, leased};
  }

  Result<Command> Apply(const TransitionRequest& request) override {
    std::lock_guard lock(mu_);
    auto run_it = runs_.find(request.run);
    if (run_it == runs_.end()) return NotFound(request.run, request.command_key);
    RunData& run = run_it->second;
    auto it = run.commands.find(request.command_key);
    if (it == run.commands.end()) return NotFound(request.run, request.command_key);
    Command c = it->second;
    RunCounters counters = run.record.counters;
    if (Status s = ApplyTransition(c, counters, request); !s.ok()) return s;
    it->second = c;
    run.record.counters = counters;
    return c;
  }

  Result<Command> Get(const RunId& id, std::string_view command_key) override {
    std::lock_guard lock(mu_);
    auto run_it = runs_.find(id);
    if (run_it == runs_.end()) return NotFound(id, command_key);
    auto it = run_it->second.commands.find(command_key);
    if (it == run_it->second.commands.end()) return NotFound(id, command_key);
    return it->second;
  }

  Result<std::vector<Command>> ListCommands(const RunId& id) override {
    std::lock_guard lock(mu_);
    std::vector<Command> out;
    if (auto it = runs_.find(id); it != runs_.end()) {
      for (const auto& [key, c] : it->second.commands) out.push_back(c);
    }
    std::sort(out.begin(), out.end(),
              [](const Command& a, const Command& b) { return a.seq < b.seq; });
    return out;
  }

  Result<std::vector<std::string>> ListRuns(const std::string& tenant) override {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto& [id, data] : runs_) {
      if (id.tenant == tenant && !data.commands.empty()) out.push_back(id.run);
    }
    return out;  // map order: sorted by run within the tenant
  }

  Result<RunRecord> GetRun(const RunId& id) override {
    std::lock_guard lock(mu_);
    if (auto it = runs_.find(id); it != runs_.end()) return it->second.record;
    RunRecord fresh;
    fresh.run = id;
    return fresh;
  }

  Result<RunRecord> SetRunStatus(const RunId& id, std::vector<RunStatus> from, RunStatus to,
                                 const std::string& reason, int64_t now_ms) override {
    std::lock_guard lock(mu_);
    RunData& run = RunOf(id);
    if (std::find(from.begin(), from.end(), run.record.status) == from.end()) {
      return Status::FailedPrecondition("run " + id.run + " is " +
                                        std::string(RunStatusName(run.record.status)) +
                                        ", cannot become " + std::string(RunStatusName(to)));
    }
    run.record.status = to;
    run.record.reason = reason;
    run.record.updated_ms = now_ms;
    return run.record;
  }

  Result<JournalEntry> PutJournalEntry(const RunId& id, const JournalEntry& entry) override {
    std::lock_guard lock(mu_);
    RunData& run = RunOf(id);
    auto [it, inserted] = run.journal.emplace(entry.position, entry);
    return it->second;
  }

  Result<std::optional<JournalEntry>> GetJournalEntry(const RunId& id, uint64_t position) override {
    std::lock_guard lock(mu_);
    auto run_it = runs_.find(id);
    if (run_it == runs_.end()) return std::optional<JournalEntry>();
    auto it = run_it->second.journal.find(position);
    if (it == run_it->second.journal.end()) return std::optional<JournalEntry>();
    return std::optional<JournalEntry>(it->second);
  }

  Status DropRun(const RunId& id) override {
    std::lock_guard lock(mu_);
    runs_.erase(id);
    return Status::Ok();
  }

 private:
  RunData& RunOf(const RunId& id) {
    auto [it, inserted] = runs_.try_emplace(id);
    if (inserted) it->second.record.run = id;
    return it->second;
  }
  static Status NotFound(const RunId& id, std::string_view key) {
    return Status::NotFound("no command " + std::string(key) + " in run " + id.tenant + "/" +
                            id.run);
  }

  std::mutex mu_;
  std::map<RunId, RunData> runs_;
};

}  // namespace

std::unique_ptr<CommandStore> NewMemoryCommandStore() {
  return std::make_unique<MemoryCommandStore>();
}

}  // namespace taskledger
