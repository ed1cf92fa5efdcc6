// Journal: durable execution of the non-deterministic parts of a run.
//
// Every LLM completion, read-only tool result, clock read and random draw of a
// run goes through the journal at the next step position. On first execution
// the result is produced and stored, keyed by (run, position), with a hash of
// the request; when the run is replayed (after a crash, by a new process), the
// stored value is returned without invoking the model, tool, clock or RNG, so
// the replayed run takes the same branches. If the replayed code asks for
// something else at a position than was recorded, the journal stops with a
// Divergence error naming the position and both requests, like Temporal's and
// Restate's non-determinism errors; every later call fails the same way.
//
// Not thread-safe: one Journal per run execution (positions are sequential).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "taskledger/base/clock.h"
#include "taskledger/base/status.h"
#include "taskledger/commands/command_store.h"

namespace taskledger {

class Journal {
 public:
  // Starts at position 1. `store` must outlive the journal.
  Journal(CommandStore& store, RunId run);

  // The general form: the value recorded at the next position for (kind,
  // request), or the one `produce` returns (stored before it is returned). A
  // failing `produce` records nothing and consumes no position.
  Result<nlohmann::json> Step(const std::string& kind, const nlohmann::json& request,
                              const std::function<Result<nlohmann::json>()>& produce);

  Result<nlohmann::json> Completion(const nlohmann::json& request,
                                    const std::function<Result<nlohmann::json>()>& model);
  Result<nlohmann::json> ToolResult(const std::string& tool, const nlohmann::json& arguments,
                                    const std::function<Result<nlohmann::json>()>& tool_call);
  Result<int64_t> NowMs(const Clock& clock);
  // A draw from `rng` (any callable returning uint64_t), recorded.
  Result<uint64_t> Random(const std::function<uint64_t()>& rng);

  const RunId& run() const { return run_; }
  // The position the next step will take.
  uint64_t next_position() const { return position_ + 1; }
  // Steps answered from the record rather than executed, so far.
  uint64_t replayed_steps() const { return replayed_; }

 private:
  CommandStore& store_;
  RunId run_;
  uint64_t position_ = 0;
  uint64_t replayed_ = 0;
  std::optional<Status> diverged_;
};

}  // namespace taskledger
