// RedisCommandStore's short replies: a fenced transition (succeed, fail,
// mark_uncertain, unlease, renew) of a command the store leased itself asks
// its function for the fields it wrote only and applies them to the hash the
// lease left (internal::LeasedHashes), so the reply carries no spec. What the
// caller gets must be exactly what a reader finds afterwards, whether the
// lease came from a reserve-and-lease, a lease transition, or another store
// (no delta then: the whole hash comes back). Each case runs on a private
// redis-server, whose INFO commandstats shows that no HGETALL ran. A library
// that ignores the request (main's, loaded by an older process after this
// store opened) answers the whole hash, which applies the same way.
// Single-threaded.
#include <catch2/catch.hpp>

#include "command_test_support.h"
#include "internal/command_redis_functions.h"

namespace taskledger::testing {
namespace {

using S = CommandState;
using T = Transition;

std::unique_ptr<CommandStore> OpenOn(const RedisServer& server) {
  RedisOptions options;
  options.url = server.url();
  auto store = OpenRedisCommandStore(options);
  if (!store) FAIL("cannot open the Redis command store: " << store.error().ToString());
  return std::move(store).value();
}

// How many HGETALLs the server has run (INFO commandstats).
long HgetallCalls(const RedisServer& server) {
  std::string stats = server.Run({"INFO", "commandstats"});
  size_t at = stats.find("cmdstat_hgetall:calls=");
  if (at == std::string::npos) return 0;
  return std::stol(stats.substr(at + std::string("cmdstat_hgetall:calls=").size()));
}

Command Leased(CommandStore& store, const RunId& run, const std::string& step, bool fused) {
  auto initial = NewCommand(SpecFor(run, step), kNow);
  REQUIRE(initial.has_value());
  if (fused) {
    auto lease = ValidRequest(*initial, T::kLease);
    auto leased = store.ReserveAndLease(*initial, lease);
    REQUIRE(leased.has_value());
    REQUIRE(leased->leased);
    return leased->command;
  }
  auto reserved = store.Reserve(*initial);
  REQUIRE(reserved.has_value());
  auto leased = store.Apply(ValidRequest(reserved->command, T::kLease));
  REQUIRE(leased.has_value());
  return *leased;
}

}  // namespace

TEST_CASE("redis command store: a fenced transition of its own lease answers what a read finds",
          "[commands][redis]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(*server);
  const RunId run = FreshRun("delta");
  int n = 0;
  for (bool fused : {true, false}) {
    for (T t : {T::kSucceed, T::kFail, T::kMarkUncertain, T::kUnlease, T::kRenew}) {
      INFO((fused ? "reserve-and-lease, then " : "reserve, lease, then ") << TransitionName(t));
      Command c = Leased(*store, run, "s" + std::to_string(++n), fused);
      const long before = HgetallCalls(*server);
      auto r = ValidRequest(c, t);
      r.now_ms = kNow + 5;
      auto after = store->Apply(r);
      REQUIRE(after.has_value());
      CHECK(HgetallCalls(*server) == before);  // the reply was built, not read back
      auto read = store->Get(run, c.command_key);
      REQUIRE(read.has_value());
      CHECK(*after == *read);
      CHECK(after->state == TransitionTarget(t));
      CHECK(after->updated_ms == kNow + 5);
      if (t == T::kRenew) {
        // A renewed lease is still this store's: its settle is short too.
        CHECK(after->lease_expires_ms == kNow + 5 + kLeaseMs);
        auto settled = store->Apply(ValidRequest(*after, T::kSucceed));
        REQUIRE(settled.has_value());
        auto again = store->Get(run, c.command_key);
        REQUIRE(again.has_value());
        CHECK(*settled == *again);
        CHECK(settled->external_id == "ext-1");
        CHECK(settled->lease_owner.empty());
      }
    }
  }
}

TEST_CASE("redis command store: a settle through a store that did not lease gets the whole hash",
          "[commands][redis]") {
  auto server = RedisServer::Start();
  auto leaser = OpenOn(*server);
  auto other = OpenOn(*server);
  const RunId run = FreshRun("delta-other");
  Command c = Leased(*leaser, run, "s", /*fused=*/true);
  const long before = HgetallCalls(*server);
  auto settled = other->Apply(ValidRequest(c, T::kSucceed));
  REQUIRE(settled.has_value());
  CHECK(HgetallCalls(*server) == before + 1);
  auto read = leaser->Get(run, c.command_key);
  REQUIRE(read.has_value());
  CHECK(*settled == *read);
  CHECK(settled->state == S::kSucceeded);

  SECTION("and the leaser's own settle of it, with the old token, is refused") {
    auto late = leaser->Apply(ValidRequest(c, T::kFail));
    REQUIRE_FALSE(late.has_value());
    auto still = leaser->Get(run, c.command_key);
    REQUIRE(still.has_value());
    CHECK(*still == *read);
  }
  SECTION("a lease taken over by another worker fences the first holder") {
    Command d = Leased(*leaser, run, "t", /*fused=*/true);
    Command leased_b = TakeOver(*other, d, "worker-b", kNow + kLeaseMs + 1);
    CHECK(leased_b.fencing_token == d.fencing_token + 1);
    auto stale = leaser->Apply(ValidRequest(d, T::kSucceed));
    REQUIRE_FALSE(stale.has_value());
    CHECK(stale.error().code() == StatusCode::kConflict);
    auto read_b = other->Get(run, d.command_key);
    REQUIRE(read_b.has_value());
    CHECK(*read_b == leased_b);
  }
}

TEST_CASE("redis command store: a library that answers the whole hash to a delta request",
          "[commands][redis]") {
  auto server = RedisServer::Start();
  auto store = OpenOn(*server);
  const RunId run = FreshRun("delta-old");
  Command c = Leased(*store, run, "s", /*fused=*/true);
  // The library as a release without short replies behaves: the same text
  // with the request never recognised, loaded by "another process".
  std::string old = internal::CommandFunctionLibrary().source;
  const std::string ask = "args[15] == 'delta'";
  REQUIRE(old.find(ask) != std::string::npos);
  old.replace(old.find(ask), ask.size(), "args[15] == 'never'");
  REQUIRE(server->Run({"FUNCTION", "LOAD", "REPLACE", old}) == "taskledger_commands");
  const long before = HgetallCalls(*server);
  auto settled = store->Apply(ValidRequest(c, T::kSucceed));
  REQUIRE(settled.has_value());
  CHECK(HgetallCalls(*server) == before + 1);  // the old way: read back in full
  auto read = store->Get(run, c.command_key);
  REQUIRE(read.has_value());
  CHECK(*settled == *read);
  CHECK(settled->state == S::kSucceeded);
  CHECK(settled->external_id == "ext-1");
}

}  // namespace taskledger::testing
