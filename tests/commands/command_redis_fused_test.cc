// A new command reserved already leased (tlc_reserve_lease's and
// tlc_commit_reserve_lease's one HSET, reserve_leased in the function
// library) must be stored exactly as a reserve followed by a lease transition
// stores it: every field and its value, as HGETALL lists them on a real
// redis-server (in no set order: a hash holding a spec is a hashtable). The
// same command goes into three runs, one per path; what must differ between
// runs is named: the spec's "run" and "idempotency_key" (both carry the
// run). Single-threaded.
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "command_test_support.h"
#include "internal/command_encoding.h"
#include "taskledger/ledger/ledger.h"
#include "taskledger/ledger/redis_store.h"

namespace taskledger::testing {
namespace {

using T = Transition;
using Hash = std::vector<std::pair<std::string, std::string>>;

// The command's hash as HGETALL lists it.
Hash ReadHash(const RedisServer& server, const Command& c) {
  const std::string key = internal::KeysOfRun(c.run).Command(c.command_key);
  std::string text = server.Run({"HGETALL", key});
  std::vector<std::string> items;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) items.push_back(line);
  if (!text.empty() && text.back() == '\n') items.push_back("");
  REQUIRE(items.size() % 2 == 0);
  Hash hash;
  for (size_t i = 0; i < items.size(); i += 2) hash.emplace_back(items[i], items[i + 1]);
  return hash;
}

// The spec without the members that name the run it belongs to.
nlohmann::json SpecWithoutRun(const std::string& spec_text) {
  nlohmann::json spec = nlohmann::json::parse(spec_text);
  REQUIRE(spec.contains("run"));
  REQUIRE(spec.contains("idempotency_key"));
  spec.erase("run");
  spec.erase("idempotency_key");
  return spec;
}

// `fused` (written by one HSET) against `stepwise` (reserve, then lease).
void CheckSameHash(const Hash& fused, const Hash& stepwise, const Command& fused_command,
                   const Command& stepwise_command) {
  std::vector<std::string> fused_fields, stepwise_fields;
  for (const auto& [field, value] : fused) fused_fields.push_back(field);
  for (const auto& [field, value] : stepwise) stepwise_fields.push_back(field);
  std::sort(fused_fields.begin(), fused_fields.end());
  std::sort(stepwise_fields.begin(), stepwise_fields.end());
  CHECK(fused_fields == stepwise_fields);
  std::map<std::string, std::string> other(stepwise.begin(), stepwise.end());
  for (const auto& [field, value] : fused) {
    INFO("field " << field);
    REQUIRE(other.count(field) == 1);
    if (field == "spec") {
      CHECK(SpecWithoutRun(value) == SpecWithoutRun(other[field]));
      auto spec = nlohmann::json::parse(value);
      CHECK(spec["run"] == fused_command.run.run);
      CHECK(spec["idempotency_key"] == fused_command.idempotency_key);
      CHECK(nlohmann::json::parse(other[field])["run"] == stepwise_command.run.run);
    } else {
      CHECK(value == other[field]);
    }
  }
}

}  // namespace

TEST_CASE("redis command store: a command reserved already leased is stored as reserve then lease",
          "[commands][redis]") {
  OwnRedis own = OwnRedisCommandStore();
  const RedisServer& server = *own.server;
  const RedisOptions& options = own.options;
  CommandStore& store = *own.commands;
  const RunId fused_run = FreshRun("fused"), carried_run = FreshRun("carried");
  const RunId stepwise_run = FreshRun("stepwise");

  // Reserve, then the lease transition: two calls.
  auto initial = NewCommand(SpecFor(stepwise_run, "s"), kNow);
  REQUIRE(initial.has_value());
  auto reserved = store.Reserve(*initial);
  REQUIRE(reserved.has_value());
  REQUIRE(reserved->created);
  auto stepwise = store.Apply(ValidRequest(reserved->command, T::kLease));
  REQUIRE(stepwise.has_value());
  const Hash stepwise_hash = ReadHash(server, *stepwise);
  REQUIRE(stepwise_hash.size() == 10);

  SECTION("tlc_reserve_lease") {
    auto fresh = NewCommand(SpecFor(fused_run, "s"), kNow);
    REQUIRE(fresh.has_value());
    auto fused = store.ReserveAndLease(*fresh, ValidRequest(*fresh, T::kLease));
    REQUIRE(fused.has_value());
    REQUIRE(fused->created);
    REQUIRE(fused->leased);
    CheckSameHash(ReadHash(server, fused->command), stepwise_hash, fused->command, *stepwise);
  }
  SECTION("tlc_commit_reserve_lease") {
    auto turns = OpenRedisStore(options);
    REQUIRE(turns.has_value());
    auto ledger = Ledger::Open(**turns, ConversationId{carried_run.tenant, carried_run.run});
    REQUIRE(ledger.has_value());
    Update fact;
    fact.op = UpdateOp::kSet;
    fact.category = Category::kFact;
    fact.key = "order";
    fact.value = 1;
    REQUIRE((*ledger)->Stage(fact).ok());
    auto fresh = NewCommand(SpecFor(carried_run, "s"), kNow);
    REQUIRE(fresh.has_value());
    std::optional<CommitReserveResult> carried;
    auto version = (*ledger)->CommitVia([&](const EncodedCommit& commit) -> Result<CarriedCommit> {
      auto done = store.CommitReserveAndLease(commit, *fresh, ValidRequest(*fresh, T::kLease));
      if (!done) return done.error();
      carried = *done;
      return done->commit;
    });
    REQUIRE(version.has_value());
    REQUIRE(carried.has_value());
    REQUIRE(carried->reserve.created);
    REQUIRE(carried->reserve.leased);
    CheckSameHash(ReadHash(server, carried->reserve.command), stepwise_hash,
                  carried->reserve.command, *stepwise);
  }
}

}  // namespace taskledger::testing
