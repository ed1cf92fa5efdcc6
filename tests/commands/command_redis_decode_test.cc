// RedisCommandStore reads a command hash field by field from the reply (no
// map): what it cannot decode (a malformed number, an unknown or missing
// state, evidence that is not JSON, no spec, a decision field that is not a
// decision record's CBOR) is a Corruption naming the
// fault, for Get, ListCommands and a transition's reply alike; a field it
// does not know (a later release's) is skipped. And a hash whose spec is in
// the full spelling (written by 0.1 and by 0.2 before the compact spec) reads
// back, and goes on through a write, exactly as one in the compact spelling
// the store writes now. Hashes are damaged or written by hand on a private
// redis-server. Single-threaded.
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "command_test_support.h"
#include "internal/command_encoding.h"
#include "internal/command_spec_text.h"

namespace taskledger::testing {
namespace {

using T = Transition;

// A command hash as 0.1 and 0.2 before the compact spec reserved it: its
// spec in the full spelling (every member, the mutable ones empty), byte for
// byte as they stored it, and the fields tlc_reserve writes.
constexpr const char* kFullRunTenant = "acme";
constexpr const char* kFullRun = "old-run";
constexpr const char* kFullKey = "s|issue_refund|order%3As|3b52bfee0e240e597c2ba1a84fe6e450";
constexpr const char* kFullSpec =
    R"({"approval_reason":"","approver":"","arguments":{"amount":12.5,"order_id":"s"},)"
    R"("attempts":0,"cancel_reason":"","command_key":"s|issue_refund|order%3As|)"
    R"(3b52bfee0e240e597c2ba1a84fe6e450","compensates":"","completed_seq":0,)"
    R"("created_ms":1700000000000,"decision":{"decision":"allow"},"escalated":false,)"
    R"("escalation_reason":"","evidence":null,"external_id":"","fencing_token":0,)"
    R"("idempotency_key":"acme:old-run/s|issue_refund|order%3As|)"
    R"(3b52bfee0e240e597c2ba1a84fe6e450","last_error":"","lease_expires_ms":0,)"
    R"("lease_owner":"","pack_version":"pack-1","replay_reason":"","replays":0,)"
    R"("run":"old-run","seq":0,"state":"pending","step":"s","target":"order:s",)"
    R"("tenant":"acme","tool":"issue_refund","updated_ms":1700000000000})";

void WriteFullSpellingHash(const RedisServer& server, const RunId& run) {
  const internal::CommandKeys keys = internal::KeysOfRun(run);
  const std::string now = std::to_string(kNow);
  std::vector<std::string> hset = {"HSET", keys.Command(kFullKey)};
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, std::string>>{{"command_key", kFullKey},
                                                        {"spec", kFullSpec},
                                                        {"state", "pending"},
                                                        {"seq", "1"},
                                                        {"attempts", "0"},
                                                        {"fencing_token", "0"},
                                                        {"lease_owner", ""},
                                                        {"lease_expires_ms", "0"},
                                                        {"created_ms", now},
                                                        {"updated_ms", now}}) {
    hset.push_back(field);
    hset.push_back(value);
  }
  REQUIRE(server.Run(hset) == "10");
  REQUIRE(server.Run({"ZADD", keys.order, "1", kFullKey}) == "1");
  REQUIRE(server.Run({"HSET", keys.meta, "next_seq", "1"}) == "1");
}

}  // namespace

TEST_CASE("redis command store: a spec in the full spelling and one in the compact read the same",
          "[commands][redis]") {
  OwnRedis own = OwnRedisCommandStore();
  CommandStore& store = *own.commands;
  const RunId old_run{kFullRunTenant, kFullRun}, new_run{kFullRunTenant, "new-run"};
  WriteFullSpellingHash(*own.server, old_run);
  auto spec_of = [](const RunId& run) {
    CommandSpec spec = SpecFor(run, "s");
    spec.target = "order:s";
    spec.call.arguments = {{"order_id", "s"}, {"amount", 12.5}};
    return spec;
  };
  auto expected = NewCommand(spec_of(old_run), kNow);
  REQUIRE(expected.has_value());
  REQUIRE(expected->command_key == kFullKey);  // the literal is this call's
  std::string full;  // and the bytes the full spelling (EncodeCommand's text) gives
  REQUIRE(internal::WriteCommandSpec(*expected, internal::SpecSpelling::kFull, full));
  CHECK(full == kFullSpec);
  expected->seq = 1;
  // The same call reserved now, in another run: its spec is compact.
  auto fresh = NewCommand(spec_of(new_run), kNow);
  REQUIRE(fresh.has_value());
  auto reserved = store.Reserve(*fresh);
  REQUIRE(reserved.has_value());
  const std::string new_spec =
      own.server->Run({"HGET", internal::KeysOfRun(new_run).Command(fresh->command_key), "spec"});
  const nlohmann::json compact = nlohmann::json::parse(new_spec);
  CHECK_FALSE(compact.contains("approver"));
  CHECK_FALSE(compact.contains("lease_owner"));
  CHECK(std::string(kFullSpec).size() - new_spec.size() > 250);

  // Both read back as the command reserved, differing only in their run.
  auto old_read = store.Get(old_run, kFullKey);
  REQUIRE(old_read.has_value());
  CHECK(*old_read == *expected);
  auto new_read = store.Get(new_run, fresh->command_key);
  REQUIRE(new_read.has_value());
  CHECK(*new_read == reserved->command);
  Command renamed = *old_read;
  renamed.run = new_run;
  renamed.idempotency_key = new_read->idempotency_key;
  CHECK(renamed == *new_read);
  auto listed = store.ListCommands(old_run);
  REQUIRE(listed.has_value());
  REQUIRE(listed->size() == 1);
  CHECK(listed->front() == *expected);

  // The old command is the one the same call names again, and runs to its end.
  auto again = store.ReserveAndLease(*expected, ValidRequest(*expected, T::kLease));
  REQUIRE(again.has_value());
  CHECK_FALSE(again->created);
  REQUIRE(again->leased);
  CHECK(again->command.idempotency_key == expected->idempotency_key);
  CHECK(again->command.decision == expected->decision);
  auto done = store.Apply(ValidRequest(again->command, T::kSucceed));
  REQUIRE(done.has_value());
  CHECK(done->state == CommandState::kSucceeded);
  auto settled = store.Get(old_run, kFullKey);
  REQUIRE(settled.has_value());
  CHECK(*settled == *done);
  CHECK(settled->external_id == "ext-1");
  CHECK(settled->call.arguments == expected->call.arguments);
}

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
                          Damage{{"HDEL", key, "spec"}, "has no spec"},
                          Damage{{"HSET", key, "decision", "\xa1\x61"},
                                 "has a decision field that is not a decision record"},
                          Damage{{"HSET", key, "decision", "\x01"},
                                 "has a decision field that is not a decision record"}}) {
    DYNAMIC_SECTION(d.argv[0] + " " + d.argv[2] + " " +
                    std::to_string(d.argv.size() > 3 ? d.argv[3].size() : 0)) {
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
