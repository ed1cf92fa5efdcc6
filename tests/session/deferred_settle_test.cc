// The deferred settle of a write (session.h, "Deferred settle") on a real
// redis-server and a real 3-primary cluster, with the turn stream and the
// commands on the same Redis (the carried commit + reserve + lease): what a
// user notices is that HandleToolCall returns once the tool ran, before the
// settle's answer is read; the settle lands and is read at the next store
// operation (or Flush); the model retrying the same call gets the recorded
// outcome, never a second run; a settle the store refused is the next
// operation's error naming the command, and is staged in the turn; a
// connection killed with the settle's answer outstanding is reported, and the
// restarted session reconciles the write exactly once.
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

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
