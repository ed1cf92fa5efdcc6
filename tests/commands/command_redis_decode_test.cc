// RedisCommandStore reads a command hash field by field from the reply (no
// map): what it cannot decode (a malformed number, an unknown or missing
// state, evidence that is not JSON, no spec) is a Corruption naming the
// fault, for Get, ListCommands and a transition's reply alike; a field it
// does not know (a later release's) is skipped. Hashes are damaged by hand
// on a private redis-server. Single-threaded.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "command_test_support.h"
#include "internal/command_encoding.h"

namespace taskledger::testing {
namespace {

using T = Transition;

}  // namespace

TEST_CASE("redis command store: a damaged command hash reads back as a named corruption",
          "[commands][redis]") {
  OwnRedis own = OwnRedisCommandStore();
  RedisServer* server = own.server.get();
  const RedisOptions& options = own.options;
  CommandStore& store = *own.commands;
  const RunId run = FreshRun("damaged");
  auto initial = NewCommand(SpecFor(run, "s"), kNow);
  REQUIRE(initial.has_value());
  auto leased = store.ReserveAndLease(*initial, ValidRequest(*initial, T::kLease));
  REQUIRE(leased.has_value());
  const std::string key = internal::KeysOfRun(run).Command(initial->command_key);

  SECTION("a field of a later release is skipped") {
    REQUIRE(server->Run({"HSET", key, "a_later_field", "x"}) == "1");
    auto read = store.Get(run, initial->command_key);
    REQUIRE(read.has_value());
    CHECK(*read == leased->command);
  }
  struct Damage {
    std::vector<std::string> argv;
    std::string message;
  };
  for (const Damage& d : {Damage{{"HSET", key, "attempts", "1x"}, "has a malformed number"},
                          Damage{{"HSET", key, "state", "gone"}, "unknown state 'gone'"},
                          Damage{{"HDEL", key, "state"}, "unknown state ''"},
                          Damage{{"HSET", key, "evidence", "{"}, "evidence is not JSON"},
                          Damage{{"HDEL", key, "spec"}, "has no spec"}}) {
    DYNAMIC_SECTION(d.argv[0] + " " + d.argv[2]) {
      REQUIRE_THAT(server->Run(d.argv), Catch::Matches("[01]"));  // not an error
      auto read = store.Get(run, initial->command_key);
      REQUIRE_FALSE(read.has_value());
      CHECK(read.error().code() == StatusCode::kCorruption);
      CHECK(read.error().message().find(d.message) != std::string::npos);
      auto listed = store.ListCommands(run);
      REQUIRE_FALSE(listed.has_value());
      CHECK(listed.error().code() == StatusCode::kCorruption);
    }
  }
  SECTION("a settle whose reply cannot be decoded is an error, not a command") {
    // Another store (no remembered lease) settles: the whole hash comes back.
    auto other = OpenRedisCommandStore(options);
    REQUIRE(other.has_value());
    REQUIRE(server->Run({"HSET", key, "seq", "-"}) == "0");
    auto settled = (*other)->Apply(ValidRequest(leased->command, T::kSucceed));
    REQUIRE_FALSE(settled.has_value());
    CHECK(settled.error().code() == StatusCode::kCorruption);
  }
}

}  // namespace taskledger::testing
