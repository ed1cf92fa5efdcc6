// Shared setup of the session tests where a write meets a store that fails
// (session_commands_test, session_carry_test, unsettled_command_test): a
// command store that refuses one transition while `down`, and the shop
// pack's confirmed cancel: the order read, the cancel proposed, the user's
// "yes" recorded, so the next HandleToolCall of `cancel` is an allowed write.
// The tool counts the cancels that reached it. Test main thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "taskledger/commands/command_store.h"
#include "taskledger/commands/memory_command_store.h"
#include "taskledger/session/session.h"

namespace taskledger::testing {

// A memory command store that answers `refused` with Unavailable while `down`.
class TransitionDownStore final : public CommandStore {
 public:
  explicit TransitionDownStore(Transition refused) : refused_(refused) {}
  bool down = false;
  Result<ReserveResult> Reserve(const Command& initial) override {
    return inner_->Reserve(initial);
  }
  Result<Command> Apply(const TransitionRequest& r) override {
    if (down && r.transition == refused_) {
      return Status::Unavailable("command store at test:0 refused the connection");
    }
    return inner_->Apply(r);
  }
  Result<Command> Get(const RunId& run, std::string_view key) override {
    return inner_->Get(run, key);
  }
  Result<std::vector<Command>> ListCommands(const RunId& run) override {
    return inner_->ListCommands(run);
  }
  Result<std::vector<std::string>> ListRuns(const std::string& tenant) override {
    return inner_->ListRuns(tenant);
  }
  Result<RunRecord> GetRun(const RunId& run) override { return inner_->GetRun(run); }
  Result<RunRecord> SetRunStatus(const RunId& run, std::vector<RunStatus> from, RunStatus to,
                                 const std::string& reason, int64_t now_ms) override {
    return inner_->SetRunStatus(run, std::move(from), to, reason, now_ms);
  }
  Result<JournalEntry> PutJournalEntry(const RunId& run, const JournalEntry& entry) override {
    return inner_->PutJournalEntry(run, entry);
  }
  Result<std::optional<JournalEntry>> GetJournalEntry(const RunId& run,
                                                      uint64_t position) override {
    return inner_->GetJournalEntry(run, position);
  }
  Status DropRun(const RunId& run) override { return inner_->DropRun(run); }

 private:
  Transition refused_;
  std::unique_ptr<CommandStore> inner_ = NewMemoryCommandStore();
};

// The shop pack's cancel of order #W1, confirmed by the user. `tools` answers
// get_order with a pending order and anything else with a cancellation.
struct ConfirmedCancel {
  int cancels = 0;  // cancels that reached the tool
  const ProposedCall cancel{"c1", "cancel_order", {{"order_id", "#W1"}}};
  ToolExecutor tools = [this](const ProposedCall& call) -> Result<ToolOutput> {
    if (call.tool == "get_order") {
      return ToolOutput{{{"order_id", call.arguments["order_id"]}, {"status", "pending"}}, false};
    }
    ++cancels;
    return ToolOutput{{{"status", "cancelled"}}, false};
  };

  ConfirmedCancel() = default;
  ConfirmedCancel(const ConfirmedCancel&) = delete;  // `tools` holds `this`
  ConfirmedCancel& operator=(const ConfirmedCancel&) = delete;

  // Reads the order (its own committed turn), proposes the cancel and records
  // the user's yes, in `s`'s staged turn.
  void Prepare(Session& s) {
    REQUIRE(s.HandleToolCall({"c0", "get_order", {{"order_id", "#W1"}}}, tools).executed);
    REQUIRE(s.EndTurn().has_value());
    s.ProposeAction(cancel);
    REQUIRE(s.RecordUserMessage("yes").ok());
  }
};

}  // namespace taskledger::testing
