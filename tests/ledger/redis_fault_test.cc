// RedisStore under faults (ctest label `fault`): kill -9 of redis-server
// between commits with appendfsync always (every acknowledged turn survives
// and the same store reconnects by itself), Redis down (Unavailable quickly,
// not a hang), and Redis stalled (Timeout within the command timeout).
#include <catch2/catch.hpp>

#include <chrono>

#include "ledger/store_backends.h"
#include "taskledger/ledger/ledger.h"

using namespace taskledger;
using namespace taskledger::testing;
using namespace std::chrono_literals;

namespace {

constexpr int64_t kT0 = 1'700'000'000'000;

std::unique_ptr<Store> OpenOn(const std::string& url, std::chrono::milliseconds timeout = 1000ms) {
  RedisOptions r;
  r.url = url;
  r.connect_timeout = timeout;
  r.command_timeout = timeout;
  r.store.snapshot_every = 3;
  auto store = OpenRedisStore(r);
  if (!store) FAIL("OpenRedisStore: " << store.error().ToString());
  return std::move(store.value());
}

template <class F>
std::chrono::milliseconds Timed(F&& f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start);
}

}  // namespace

TEST_CASE("redis fault: acknowledged turns survive kill -9 and the store reconnects",
          "[redis][fault]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url());
  ConversationId id{"acme", "durable"};
  std::vector<LedgerState> acknowledged(1);  // version 0: empty
  LedgerState head;
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 5; ++i) {
      int n = round * 5 + i;
      REQUIRE(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "n", n)}, kT0 + n).ok());
      acknowledged.push_back(head);
    }
    server->Kill9();
    // Down: the commit fails as a value and nothing is acknowledged.
    LedgerState attempt = head;
    Status down = CommitNext(*store, id, attempt, {SetUpdate(Category::kFact, "lost", true)}, kT0);
    CHECK(down.code() == StatusCode::kUnavailable);
    server->Restart();
    // The same store object reconnects on its next call.
    auto read_head = store->Head(id);
    REQUIRE(read_head.has_value());
    CHECK(read_head.value() == acknowledged.size() - 1);
  }
  for (uint64_t v = 0; v < acknowledged.size(); ++v) {
    INFO("version " << v);
    CHECK(store->ReadVersion(id, v).value() == acknowledged[v]);
  }
}

TEST_CASE("redis fault: a Ledger commits again after Redis comes back", "[redis][fault]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url());
  ManualClock clock;
  auto ledger = Ledger::Open(*store, {"acme", "resume"}, clock).value();
  REQUIRE(ledger->Stage(SetUpdate(Category::kFact, "before", 1)).ok());
  REQUIRE(ledger->Commit().has_value());
  REQUIRE(ledger->Stage(SetUpdate(Category::kFact, "during", 2)).ok());
  server->Kill9();
  auto failed = ledger->Commit();
  REQUIRE_FALSE(failed.has_value());
  CHECK(failed.error().code() == StatusCode::kUnavailable);
  CHECK(ledger->staged_updates() == 1);  // the turn was not dropped
  server->Restart();
  REQUIRE(ledger->Commit().value() == 2);
  auto head = store->ReadHead({"acme", "resume"}).value();
  CHECK(head.of(Category::kFact).at("before").value == 1);
  CHECK(head.of(Category::kFact).at("during").value == 2);
}

TEST_CASE("redis fault: Redis down is Unavailable quickly, never a hang", "[redis][fault]") {
  auto server = RedisServer::Start();
  std::string url = server->url();
  auto store = OpenOn(url);
  server->Stop();
  ConversationId id{"acme", "down"};
  LedgerState head;
  auto elapsed = Timed([&] {
    CHECK(CommitNext(*store, id, head, {}, kT0).code() == StatusCode::kUnavailable);
    CHECK(store->Head(id).error().code() == StatusCode::kUnavailable);
    CHECK(store->ReadHead(id).error().code() == StatusCode::kUnavailable);
    CHECK(store->ListConversations("acme").error().code() == StatusCode::kUnavailable);
  });
  CHECK(elapsed < 500ms);
  RedisOptions options;
  options.url = url;
  auto refused = OpenRedisStore(options);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code() == StatusCode::kUnavailable);
  CHECK(head.version == 0);
}

TEST_CASE("redis fault: a stalled Redis yields Timeout within the command timeout",
          "[redis][fault]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url(), 200ms);
  ConversationId id{"acme", "slow"};
  LedgerState head;
  REQUIRE(CommitNext(*store, id, head, {}, kT0).ok());
  // CLIENT PAUSE ALL stalls every normal client's commands, like a server
  // stuck in a slow script or a fork.
  REQUIRE(server->Run({"CLIENT", "PAUSE", "1500", "ALL"}) == "OK");
  LedgerState attempt = head;
  Status slow;
  auto elapsed = Timed(
      [&] { slow = CommitNext(*store, id, attempt, {SetUpdate(Category::kFact, "x", 1)}, kT0); });
  CHECK(slow.code() == StatusCode::kTimeout);
  CHECK(elapsed >= 150ms);
  CHECK(elapsed < 800ms);
  auto read_elapsed = Timed([&] { CHECK(store->Head(id).error().code() == StatusCode::kTimeout); });
  CHECK(read_elapsed < 800ms);
  REQUIRE(server->Run({"CLIENT", "UNPAUSE"}) == "OK");
  // The timed-out commit may have landed once the pause ended; retrying the
  // very same turn is safe either way (idempotent), and nothing is doubled.
  attempt = head;
  REQUIRE(CommitNext(*store, id, attempt, {SetUpdate(Category::kFact, "x", 1)}, kT0).ok());
  CHECK(store->Head(id).value() == 2);
  CHECK(store->ReadHead(id).value() == attempt);
}

TEST_CASE("redis fault: a large batch to a killed server fails as a value (no SIGPIPE)",
          "[redis][fault]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(server->url());
  LedgerState warm;
  REQUIRE(
      CommitNext(*store, {"acme", "warm"}, warm, {}, kT0).ok());  // the pooled connection is open
  server->Kill9();
  // ~2 MB of pipelined commits: hiredis needs many write() calls, and those
  // after the peer's reset would raise SIGPIPE if it were not contained.
  constexpr int kConversations = 200;
  std::vector<TurnRecord> turns(kConversations);
  std::vector<LedgerState> afters(kConversations);
  std::vector<CommitRequest> batch;
  for (int i = 0; i < kConversations; ++i) {
    turns[i].turn = 1;
    turns[i].updates = {SetUpdate(Category::kFact, "blob", std::string(10'000, 'x'))};
    REQUIRE(ApplyTurn(afters[i], turns[i]).ok());
    batch.push_back({{"acme", "big" + std::to_string(i)}, &turns[i], &afters[i]});
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto results = store->CommitTurns(batch);
    for (const Status& s : results) CHECK(s.code() == StatusCode::kUnavailable);
  }
}
