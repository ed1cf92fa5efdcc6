// A write that ran but whose outcome the command store refused to record: the
// session keeps the lease for the next session's startup guard and stages a
// typed extraction error (source "commands", code "command_unsettled", the
// command key kept as an extra member). What an auditor notices is that the
// turn's stored error record is exactly the one 0.1 wrote: the same six
// members, command_key included.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "session/confirmed_write_support.h"
#include "session/session_support.h"
#include "taskledger/ledger/extraction_error.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/session/session.h"

using namespace taskledger;
using namespace taskledger::testing;

TEST_CASE("session commands: a write whose outcome cannot be recorded leaves a typed error") {
  auto store = NewMemoryStore();
  TransitionDownStore commands(Transition::kSucceed);
  SessionOptions options;
  options.commands.store = &commands;
  const ConversationId id{"t", "unsettled"};
  auto opened = Session::Open(*store, id, ShopPack(), options);
  REQUIRE(opened.has_value());
  Session& s = **opened;
  ConfirmedCancel w;
  w.Prepare(s);

  commands.down = true;
  CallResult r = s.HandleToolCall(w.cancel, w.tools);
  CHECK(r.executed);
  CHECK(w.cancels == 1);
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
