// A Session whose conversation and command ledger live on the same Redis: an
// allowed write's write-ahead commit, reservation and lease are one FCALL
// (tlc_commit_reserve_lease), and every failure branch of the two-call path
// still holds: a commit conflict reserves nothing and keeps the user's yes, a
// command that is not ready commits nothing, a Redis that is down runs
// nothing. Each case runs on a private redis-server, whose command counters
// the first case reads.
#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "session/command_session_support.h"
#include "session/confirmed_write_support.h"
#include "session/session_support.h"
#include "support/redis_server.h"
#include "taskledger/ledger/redis_store.h"
#include "taskledger/session/session.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// A conversation and its command ledger on one private Redis.
struct OneRedis {
  std::unique_ptr<RedisServer> server = RedisServer::Start();
  std::unique_ptr<Store> turns;
  std::unique_ptr<CommandStore> commands;
  ConversationId conv{"t{:}carry", "conv-1"};
  OneRedis() {
    RedisOptions options;
    options.url = server->url();
    auto t = OpenRedisStore(options);
    REQUIRE(t.has_value());
    turns = std::move(t).value();
    auto c = OpenRedisCommandStore(options);
    REQUIRE(c.has_value());
    commands = std::move(c).value();
  }
  RunId run() const { return RunId{conv.tenant, conv.conversation}; }
  std::unique_ptr<Session> Open(std::shared_ptr<const RulePack> pack) {
    SessionOptions options;
    options.commands.store = commands.get();
    auto s = Session::Open(*turns, conv, std::move(pack), options);
    REQUIRE(s.has_value());
    return std::move(s).value();
  }
  // How many times the server ran `command` (INFO commandstats).
  int64_t Calls(const std::string& command) {
    const std::string text = server->Run({"INFO", "commandstats"});
    const std::string key = "cmdstat_" + command + ":calls=";
    size_t at = text.find(key);
    if (at == std::string::npos) return 0;
    return std::stoll(text.substr(at + key.size()));
  }
};

}  // namespace

TEST_CASE("session on one Redis: a write's commit, reserve and lease are one call",
          "[session][redis]") {
  OneRedis r;
  auto session = r.Open(RefundPack());
  Backend backend;
  REQUIRE(session->HandleToolCall(Ship("c1"), backend.executor()).executed);
  REQUIRE(session->EndTurn().has_value());
  const int64_t fcalls = r.Calls("fcall");
  const uint64_t commits = *r.turns->Head(r.conv);
  CallResult second =
      session->HandleToolCall({"c2", "ship", {{"order_id", "#B2"}}}, backend.executor());
  REQUIRE(second.executed);
  REQUIRE(second.command.has_value());
  CHECK(second.command->state == CommandState::kSucceeded);
  CHECK(second.command->attempts == 1);
  // The write-ahead commit landed (the decision is durable before the call
  // ran), and the write took two calls: commit + reserve + lease, then settle.
  CHECK(*r.turns->Head(r.conv) == commits + 1);
  // The settle was sent without waiting: read its answer before counting on
  // another connection (Flush sends nothing).
  REQUIRE(session->Flush().ok());
  CHECK(r.Calls("fcall") - fcalls == 2);
  REQUIRE(backend.keys.size() == 2);
  CHECK(backend.keys[1] == second.command->idempotency_key);
  // That commit holds the decision that allowed c2.
  auto landed = r.turns->ReadTurns(r.conv, commits + 1, commits + 1);
  REQUIRE(landed.has_value());
  REQUIRE(landed->size() == 1);
  bool decided = false;
  for (const DecisionRecord& d : landed->front().decisions) decided = decided || d.call_id == "c2";
  CHECK(decided);
}

TEST_CASE("session on one Redis: a write-ahead conflict reserves nothing and keeps the yes",
          "[session][redis]") {
  OneRedis r;
  auto session = r.Open(ShopPack());
  auto other = r.Open(ShopPack());
  ConfirmedCancel w;
  w.Prepare(*session);
  // Another writer commits first.
  REQUIRE(other->Rebase().ok());
  REQUIRE(other->RecordUserMessage("hello").ok());
  REQUIRE(other->EndTurn().has_value());
  const uint64_t head = *r.turns->Head(r.conv);

  CallResult denied = session->HandleToolCall(w.cancel, w.tools);
  CHECK_FALSE(denied.executed);
  CHECK(w.cancels == 0);
  CHECK(denied.decision.rule_id == kStateConflictRule);
  CHECK(*r.turns->Head(r.conv) == head);
  auto listed = r.commands->ListCommands(r.run());
  REQUIRE(listed.has_value());
  CHECK(listed->empty());  // nothing reserved, nothing to give back
  CHECK(session->ledger().working().FindLive(Category::kCondition, "confirmation", 0) != nullptr);

  // After a rebase the same command runs once, on the same yes.
  REQUIRE(session->Rebase().ok());
  CallResult retried =
      session->HandleToolCall({"c2", "cancel_order", {{"order_id", "#W1"}}}, w.tools);
  CHECK(retried.executed);
  CHECK(w.cancels == 1);
  REQUIRE(retried.command.has_value());
  CHECK(retried.command->state == CommandState::kSucceeded);
  CHECK(retried.command->attempts == 1);
  CHECK(retried.command->fencing_token == 1);
}

TEST_CASE("session on one Redis: a command running elsewhere commits nothing and runs nothing",
          "[session][redis]") {
  OneRedis r;
  auto first = r.Open(RefundPack());
  auto second = r.Open(RefundPack());
  Backend backend;
  std::optional<CallResult> inner;
  uint64_t head_inside = 0, head_after = 0;
  auto run = [&](const ProposedCall& call, const ToolContext& ctx) -> Result<ToolOutput> {
    // While the first session's command is leased and running, the second
    // (at the head: it rebased) proposes the same call.
    REQUIRE(second->Rebase().ok());
    head_inside = *r.turns->Head(r.conv);
    inner = second->HandleToolCall(call, backend.executor());
    head_after = *r.turns->Head(r.conv);
    return backend.executor()(call, ctx);
  };
  CallResult outer = first->HandleToolCall(Ship("c1"), run);
  REQUIRE(outer.executed);
  REQUIRE(inner.has_value());
  CHECK_FALSE(inner->executed);
  REQUIRE(inner->command.has_value());
  CHECK(inner->command->state == CommandState::kLeased);
  CHECK_THAT(inner->message, Catch::Contains("already running"));
  CHECK(head_after == head_inside);  // the refused write committed nothing
  CHECK(backend.keys.size() == 1);
  REQUIRE(first->Flush().ok());  // its settle's answer read: any connection sees it
  auto listed = r.commands->ListCommands(r.run());
  REQUIRE(listed.has_value());
  REQUIRE(listed->size() == 1);
  CHECK(listed->front().state == CommandState::kSucceeded);
  CHECK(listed->front().attempts == 1);
  // The second session's turn (its in_progress record) commits normally.
  REQUIRE(second->EndTurn().has_value());
}

TEST_CASE("session on one Redis: a write while Redis is down runs nothing and keeps the yes",
          "[session][redis]") {
  OneRedis r;
  auto session = r.Open(ShopPack());
  ConfirmedCancel w;
  w.Prepare(*session);

  r.server->Stop();
  CallResult denied = session->HandleToolCall(w.cancel, w.tools);
  CHECK_FALSE(denied.executed);
  CHECK(w.cancels == 0);
  CHECK(denied.decision.rule_id == kStoreUnavailableRule);
  CHECK(session->ledger().working().FindLive(Category::kCondition, "confirmation", 0) != nullptr);

  // Redis is back (its AOF replayed): the same command runs once, on the same yes.
  r.server->Restart();
  REQUIRE(r.commands->ListCommands(r.run())->empty());
  CallResult retried =
      session->HandleToolCall({"c2", "cancel_order", {{"order_id", "#W1"}}}, w.tools);
  CHECK(retried.executed);
  CHECK(w.cancels == 1);
  REQUIRE(retried.command.has_value());
  CHECK(retried.command->state == CommandState::kSucceeded);
  CHECK(retried.command->attempts == 1);
  // The turn store's pooled connection died with the server: its first call
  // may fail (a request whose connection broke is not re-sent); the turn
  // stays staged and the next EndTurn commits it.
  auto ended = session->EndTurn();
  if (!ended.has_value()) {
    CHECK(ended.error().code() == StatusCode::kUnavailable);
    ended = session->EndTurn();
  }
  REQUIRE(ended.has_value());
  auto head = r.turns->ReadHead(r.conv);
  REQUIRE(head.has_value());
  std::vector<std::string> outcomes;
  for (const CallRecord& c : head->calls) outcomes.push_back(c.call.id + ":" + c.outcome);
  CHECK(outcomes == std::vector<std::string>{"c0:ok", "c1:denied", "c2:ok"});
}
