// The deferred settle of a write (session.h, "Deferred settle") on a real
// redis-server and a real 3-primary cluster, with the turn stream and the
// commands on the same Redis (the carried commit + reserve + lease): what a
// user notices is that HandleToolCall returns once the tool ran, before the
// settle's answer is read; the settle lands and is read at the next store
// operation (or Flush); the model retrying the same call gets the recorded
// outcome, never a second run; a settle the store refused is the next
// operation's error naming the command, and is staged in the turn; a
// connection killed with the settle's answer outstanding is reported, and the
// restarted session reconciles the write exactly once. The next write's
// commit + reserve + lease goes out right behind the unread settle (one wait
// for both), and runs only if the settle landed.
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "reliability/fault_proxy.h"
#include "session/command_session_support.h"
#include "support/redis_server.h"
#include "taskledger/commands/redis_command_store.h"
#include "taskledger/ledger/redis_store.h"
#include "taskledger/session/session.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// The ledger and the command store on one Redis (or cluster), as a service
// deploys them, and a session on a fresh conversation that records the
// command-ledger points it passes.
struct OnRedis {
  std::unique_ptr<Store> ledger_store;
  std::unique_ptr<CommandStore> commands;
  ConversationId conv;
  std::vector<std::string> points;
  Backend backend;

  explicit OnRedis(const std::string& url) {
    RedisOptions options;
    options.url = url;
    auto store = OpenRedisStore(options);
    REQUIRE(store.has_value());
    ledger_store = std::move(store).value();
    auto c = OpenRedisCommandStore(options);
    REQUIRE(c.has_value());
    commands = std::move(c).value();
    RunId fresh = FreshRun("deferred");
    conv = ConversationId{fresh.tenant, fresh.run};
  }
  RunId run() const { return RunId{conv.tenant, conv.conversation}; }

  std::unique_ptr<Session> Open() {
    SessionOptions options;
    options.commands.store = commands.get();
    options.commands.observer = [this](std::string_view point, const Command&) {
      points.emplace_back(point);
    };
    options.commands.lookup = [this](const Command& c) {
      for (const std::string& key : backend.keys) {
        if (key == c.idempotency_key) return LookupResult::Found("ext", {{"found", true}});
      }
      return LookupResult::NotFound();
    };
    auto s = Session::Open(*ledger_store, conv, RefundPack(), options);
    REQUIRE(s.has_value());
    return std::move(s).value();
  }
  int Seen(const std::string& point) const {
    int n = 0;
    for (const std::string& p : points) n += p == point ? 1 : 0;
    return n;
  }
  Command Stored(const std::string& key) {
    auto c = commands->Get(run(), key);
    REQUIRE(c.has_value());
    return *c;
  }
};

std::string UrlOf(const std::string& kind) {
  return kind == "cluster" ? SharedRedisClusterUrl() : SharedRedisUrl();
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a deferred settle: the write returns after the tool, the settle lands at Flush",
          "[session][redis][cluster]") {
  OnRedis r(UrlOf(GENERATE(as<std::string>{}, "redis", "cluster")));
  auto session = r.Open();
  CallResult first = session->HandleToolCall(Ship("c1"), r.backend.executor());
  REQUIRE(first.executed);
  REQUIRE(first.command.has_value());
  CHECK(first.command->state == CommandState::kSucceeded);
  CHECK(first.command->evidence["output"]["ok"] == true);
  // Sent, not read: HandleToolCall did not wait for the settle's answer.
  CHECK(r.Seen("settle_sent") == 1);
  CHECK(r.Seen("outcome") == 0);
  REQUIRE(session->Flush().ok());
  CHECK(r.Seen("outcome") == 1);
  CHECK(session->Flush().ok());  // nothing outstanding: nothing to do
  Command stored = r.Stored(first.command->command_key);
  CHECK(stored.state == CommandState::kSucceeded);
  CHECK(stored.evidence["output"]["ok"] == true);
  CHECK(stored.external_id == first.command->external_id);
  CHECK(stored.completed_seq == 1);

  REQUIRE(session->EndTurn().has_value());
}

TEST_CASE("the same write proposed right after a deferred settle returns the recorded outcome",
          "[session][redis][cluster]") {
  OnRedis r(UrlOf(GENERATE(as<std::string>{}, "redis", "cluster")));
  auto session = r.Open();
  CallResult first = session->HandleToolCall(Ship("c1"), r.backend.executor());
  REQUIRE(first.executed);
  // No Flush: the next write reads the settle first.
  CallResult again = session->HandleToolCall(Ship("c2"), r.backend.executor());
  CHECK_FALSE(again.executed);
  REQUIRE(again.command.has_value());
  CHECK(again.command->state == CommandState::kSucceeded);
  CHECK(again.command->command_key == first.command->command_key);
  CHECK(Has(again.message, "Already done"));
  CHECK(r.backend.keys.size() == 1);
  REQUIRE(Calls(*session).size() == 2);
  CHECK(Calls(*session)[1].outcome == "deduplicated");
  REQUIRE(session->EndTurn().has_value());
}

TEST_CASE("a deferred settle the store refused is the next operation's error, naming the command",
          "[session][redis][cluster]") {
  OnRedis r(UrlOf(GENERATE(as<std::string>{}, "redis", "cluster")));
  const bool next_is_write = GENERATE(false, true);
  auto session = r.Open();
  // While the tool runs, a reclaimer takes the lease over (it expired, say):
  // the settle that follows is fenced.
  ContextToolExecutor execute = [&](const ProposedCall& call, const ToolContext& ctx) {
    auto leased = r.commands->Get(ctx.run, ctx.command_key);
    REQUIRE(leased.has_value());
    (void)TakeOver(*r.commands, *leased, "reclaimer", leased->lease_expires_ms);
    return r.backend.executor()(call, ctx);
  };
  CallResult first = session->HandleToolCall(Ship("c1"), execute);
  REQUIRE(first.executed);
  REQUIRE(first.command.has_value());
  const std::string key = first.command->command_key;
  if (next_is_write) {
    ProposedCall other{"c2", "ship", {{"order_id", "#B2"}}};
    CallResult denied = session->HandleToolCall(other, r.backend.executor());
    CHECK_FALSE(denied.executed);
    CHECK(denied.decision.rule_id == kStoreUnavailableRule);
    CHECK(Has(denied.decision.reason, key));
    CHECK(Has(denied.message, key));
    CHECK(r.backend.keys.size() == 1);
    // Sent behind the fenced settle, the write wrote nothing: no command,
    // and the turn it carried was not committed.
    auto listed = r.commands->ListCommands(r.run());
    REQUIRE(listed.has_value());
    CHECK(listed->size() == 1);
    CHECK(session->ledger().version() == 1);
  } else {
    auto ended = session->EndTurn();
    REQUIRE_FALSE(ended.has_value());
    CHECK(ended.error().code() == StatusCode::kConflict);  // the fencing token is stale
    CHECK(Has(ended.error().message(), key));
    CHECK(Has(ended.error().message(), "ship"));
  }
  // Staged in the turn, as a synchronous settle's failure is, and reported once.
  bool staged = false;
  for (const ExtractionError& e : session->pending().errors) {
    staged = staged || (e.code == "command_unsettled" && Has(e.message.value_or(""), key));
  }
  CHECK(staged);
  CHECK(session->Flush().ok());
  REQUIRE(session->EndTurn().has_value());
  CHECK(r.Stored(key).lease_owner == "reclaimer");
  CHECK(r.Seen("outcome") == 0);
}

TEST_CASE("a connection killed with the settle's answer outstanding: reported, then reconciled",
          "[session][redis]") {
  auto server = RedisServer::Start();
  std::optional<OnRedis> r;
  r.emplace(server->url());
  auto session = r->Open();
  // The tool takes effect; then the server holds writes, so the settle waits
  // there until its connection is killed: it never runs, no answer comes.
  ContextToolExecutor execute = [&](const ProposedCall& call, const ToolContext& ctx) {
    auto out = r->backend.executor()(call, ctx);
    REQUIRE(server->Run({"CLIENT", "PAUSE", "10000", "WRITE"}) == "OK");
    return out;
  };
  CallResult first = session->HandleToolCall(Ship("c1"), execute);
  REQUIRE(first.executed);
  const std::string key = first.command->command_key;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(server->Run({"CLIENT", "KILL", "TYPE", "normal"}) != "0");
  REQUIRE(server->Run({"CLIENT", "UNPAUSE"}) == "OK");
  auto ended = session->EndTurn();
  REQUIRE_FALSE(ended.has_value());
  CHECK(ended.error().code() == StatusCode::kUnavailable);
  CHECK(Has(ended.error().message(), key));
  // The turn still commits: the ledger's pooled connections were killed too,
  // and each finds that out on its first use (Unavailable, then a new one).
  Result<uint64_t> committed = session->EndTurn();
  for (int i = 0; i < 3 && !committed.has_value(); ++i) committed = session->EndTurn();
  REQUIRE(committed.has_value());
  CHECK(r->Stored(key).state == CommandState::kLeased);  // no outcome recorded

  // The loop restarts: the startup guard finds the lease, the lookup finds
  // the effect, and the write is recorded once; proposed again, it is not re-run.
  session.reset();
  auto reopened = r->Open();
  REQUIRE(reopened->recovery().has_value());
  CHECK(reopened->recovery()->reconciled == 1);
  CHECK(r->Stored(key).state == CommandState::kSucceeded);
  CallResult again = reopened->HandleToolCall(Ship("c1"), r->backend.executor());
  CHECK_FALSE(again.executed);
  CHECK(r->backend.keys.size() == 1);
}

namespace {

// Polls the run's commands straight on the server (not through the proxy)
// until there are `n`, for up to 5 s.
bool CommandsReach(CommandStore& direct, const RunId& run, size_t n) {
  for (int i = 0; i < 500; ++i) {
    auto listed = direct.ListCommands(run);
    if (listed.has_value() && listed->size() >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::unique_ptr<CommandStore> Direct(const RedisServer& server) {
  RedisOptions options;
  options.url = server.url();
  auto store = OpenRedisCommandStore(options);
  REQUIRE(store.has_value());
  return std::move(store).value();
}

}  // namespace

TEST_CASE("back-to-back writes: the next write goes out before the settle's answer is back",
          "[session][redis]") {
  auto server = RedisServer::Start();
  auto proxy = FaultProxy::Start(server->port());
  auto direct = Direct(*server);
  OnRedis r(proxy->url());
  auto session = r.Open();
  // From the first tool's run on, the server's answers are held back: the
  // settle that follows it reaches the server, its answer does not.
  ContextToolExecutor execute = [&](const ProposedCall& call, const ToolContext& ctx) {
    proxy->SetMode(FaultProxy::Mode::kHoldReplies);
    return r.backend.executor()(call, ctx);
  };
  CallResult first = session->HandleToolCall(Ship("c1"), execute);
  REQUIRE(first.executed);
  ProposedCall other{"c2", "ship", {{"order_id", "#B2"}}};
  std::optional<CallResult> second;
  std::thread loop([&] { second = session->HandleToolCall(other, r.backend.executor()); });
  // The second write's commit, reserve and lease reach the server while the
  // first settle's answer is still held: the loop did not wait for it.
  const bool sent_behind = CommandsReach(*direct, r.run(), 2);
  proxy->SetMode(FaultProxy::Mode::kPass);
  loop.join();
  CHECK(sent_behind);
  REQUIRE(second.has_value());
  CHECK(second->executed);
  CHECK(r.Seen("outcome") == 1);  // the first settle, read with the second write
  REQUIRE(session->Flush().ok());
  CHECK(r.Seen("outcome") == 2);
  CHECK(r.Stored(first.command->command_key).state == CommandState::kSucceeded);
  CHECK(r.Stored(second->command->command_key).state == CommandState::kSucceeded);
  CHECK(r.backend.keys.size() == 2);
  REQUIRE(session->EndTurn().has_value());
}

TEST_CASE("both answers lost (the settle's and the write's behind it): reconciled exactly once",
          "[session][redis]") {
  auto server = RedisServer::Start();
  auto proxy = FaultProxy::Start(server->port());
  auto direct = Direct(*server);
  std::optional<OnRedis> r;
  r.emplace(proxy->url());
  auto session = r->Open();
  ContextToolExecutor execute = [&](const ProposedCall& call, const ToolContext& ctx) {
    proxy->SetMode(FaultProxy::Mode::kHoldReplies);
    return r->backend.executor()(call, ctx);
  };
  CallResult first = session->HandleToolCall(Ship("c1"), execute);
  REQUIRE(first.executed);
  const std::string key = first.command->command_key;
  ProposedCall other{"c2", "ship", {{"order_id", "#B2"}}};
  std::optional<CallResult> second;
  std::thread loop([&] { second = session->HandleToolCall(other, r->backend.executor()); });
  // Both ran on the server; then the connection dies with both answers unread.
  REQUIRE(CommandsReach(*direct, r->run(), 2));
  proxy->SetMode(FaultProxy::Mode::kDropReplies);
  loop.join();
  REQUIRE(second.has_value());
  CHECK_FALSE(second->executed);  // no answer, no run
  CHECK(second->decision.rule_id == kStoreUnavailableRule);
  CHECK(Has(second->decision.reason, key));  // named: the write whose outcome is unknown
  CHECK(r->backend.keys.size() == 1);
  proxy->SetMode(FaultProxy::Mode::kPass);

  // The loop restarts: the first write had settled; the second, leased and
  // never run, is found by the startup guard, not found by the lookup, and
  // released; proposed again it runs once.
  session.reset();
  auto reopened = r->Open();
  REQUIRE(reopened->recovery().has_value());
  CHECK(r->Stored(key).state == CommandState::kSucceeded);
  CallResult again = reopened->HandleToolCall(other, r->backend.executor());
  CHECK(again.executed);
  CHECK(r->backend.keys.size() == 2);
  REQUIRE(reopened->Flush().ok());
  CallResult twice = reopened->HandleToolCall(other, r->backend.executor());
  CHECK_FALSE(twice.executed);
  CHECK(r->backend.keys.size() == 2);
}
