// A write that ran but whose outcome the command store refused to record: the
// session keeps the lease for the next session's startup guard and stages a
// typed extraction error (source "commands", code "command_unsettled", the
// command key kept as an extra member). What an auditor notices is that the
// turn's stored error record is exactly the one 0.1 wrote: the same six
// members, command_key included.
#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "session/session_support.h"
#include "taskledger/commands/command_store.h"
#include "taskledger/commands/memory_command_store.h"
#include "taskledger/ledger/extraction_error.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/session/session.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// A memory command store that refuses to record a success while `down`.
class SettleDownStore final : public CommandStore {
 public:
  bool down = false;
  Result<ReserveResult> Reserve(const Command& initial) override {
    return inner_->Reserve(initial);
  }
  Result<Command> Apply(const TransitionRequest& r) override {
    if (down && r.transition == Transition::kSucceed) {
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
  std::unique_ptr<CommandStore> inner_ = NewMemoryCommandStore();
};

}  // namespace

TEST_CASE("session commands: a write whose outcome cannot be recorded leaves a typed error") {
  auto store = NewMemoryStore();
  SettleDownStore commands;
  SessionOptions options;
  options.commands.store = &commands;
  const ConversationId id{"t", "unsettled"};
  auto opened = Session::Open(*store, id, ShopPack(), options);
  REQUIRE(opened.has_value());
  Session& s = **opened;
  int cancels = 0;
  auto tools = [&](const ProposedCall& call) -> Result<ToolOutput> {
    if (call.tool == "get_order") {
      return ToolOutput{{{"order_id", call.arguments["order_id"]}, {"status", "pending"}}, false};
    }
    ++cancels;
    return ToolOutput{{{"status", "cancelled"}}, false};
  };
  REQUIRE(s.HandleToolCall({"c0", "get_order", {{"order_id", "#W1"}}}, tools).executed);
  REQUIRE(s.EndTurn().has_value());
  ProposedCall cancel{"c1", "cancel_order", {{"order_id", "#W1"}}};
  s.ProposeAction(cancel);
  REQUIRE(s.RecordUserMessage("yes").ok());

  commands.down = true;
  CallResult r = s.HandleToolCall(cancel, tools);
  CHECK(r.executed);
  CHECK(cancels == 1);
  // The lease stays for the startup guard of the next session.
  REQUIRE(r.command.has_value());
  CHECK(r.command->state == CommandState::kLeased);
  const std::string key = r.command->command_key;
  REQUIRE_FALSE(key.empty());

  REQUIRE_FALSE(s.pending().errors.empty());
  const ExtractionError staged = s.pending().errors.back();
  CHECK(staged.source == "commands");
  CHECK(staged.code == "command_unsettled");
  CHECK(staged.tool == "cancel_order");
  CHECK(staged.call_id == "c1");
  CHECK_FALSE(staged.rule.has_value());
  CHECK_THAT(staged.message.value_or(""), Catch::Contains("refused the connection"));
  CHECK(staged.extra == nlohmann::json{{"command_key", key}});

  auto version = s.EndTurn();
  REQUIRE(version.has_value());
  auto turns = store->ReadTurns(id, *version, *version);
  REQUIRE(turns.has_value());
  REQUIRE(turns->size() == 1);
  REQUIRE_FALSE(turns->front().errors.empty());
  CHECK(turns->front().errors.back() == staged);
  // Stored as 0.1 stored it: one flat object, command_key beside the others.
  CHECK(EncodeExtractionError(turns->front().errors.back()) ==
        nlohmann::json{{"source", "commands"},
                       {"tool", "cancel_order"},
                       {"call_id", "c1"},
                       {"code", "command_unsettled"},
                       {"command_key", key},
                       {"message", *staged.message}});
}
