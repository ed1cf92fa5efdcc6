// A command's decision record kept in the encoding its turn keeps (#17): a
// typed record reserved through the Redis command store is stored in the
// hash's "decision" field as the CBOR bytes of its turn (AppendDecisionBytes),
// the spec without it, and reads back as the same record; a session's write
// (commit + reserve + lease in one FCALL) sends those bytes once, as a
// reference into the turn it carries; a hash written before the field
// existed (decision inside the spec, by 0.1 and main) reads back, is reserved
// again and settles. On a real redis-server and, in the cluster build, on a
// real Redis Cluster. Single-threaded.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "command_test_support.h"
#include "internal/command_encoding.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/ledger/decision_bytes.h"
#include "taskledger/ledger/ledger.h"
#include "taskledger/ledger/redis_store.h"

#ifndef TASKLEDGER_CLUSTER_TESTS
#include "internal/command_redis_functions.h"
#endif

namespace taskledger::testing {
namespace {

using T = Transition;

#ifdef TASKLEDGER_CLUSTER_TESTS
constexpr const char* kKind = "cluster";
std::string Url() { return SharedRedisClusterUrl(); }
#else
constexpr const char* kKind = "redis";
std::string Url() { return SharedRedisUrl(); }
#endif

// One command on the node that holds `key` (the first node of `url`, or the
// one its MOVED answer names).
std::string RunOn(const std::string& url, const std::string& key,
                  const std::vector<std::string>& argv) {
  const size_t colon = url.find(':', url.find("//") + 2);
  const int first = std::stoi(url.substr(colon + 1));
  std::string reply = RunRedisCommand(first, argv);
  if (reply.rfind("(error) MOVED", 0) == 0) {
    reply = RunRedisCommand(std::stoi(reply.substr(reply.rfind(':') + 1)), argv);
  }
  INFO("key " << key);
  return reply;
}

std::string CommandHashKey(const Command& c) {
  return internal::KeysOfRun(c.run).Command(c.command_key);
}

// A record with every member set, rules with reads (one absent), a log line
// and text outside ASCII.
DecisionRecord Record(const RunId& run, const std::string& call_id) {
  DecisionRecord d;
  d.conversation = run.run;
  d.turn = 1;
  d.staged_seen = 1;
  d.tool = "issue_refund";
  d.call_id = call_id;
  d.args_hash = "9f2c";
  d.decision = "allow";
  d.reason = "2 rules applied, all passed";
  d.pack_version = "pack-1";
  d.latency_us = 37;
  RuleResult auth{"retail.auth", "allow", "identity verified ✓", false, {"looked up user"}, {}};
  EntryRead user;
  user.category = Category::kIdentifier;
  user.key = "user.id";
  user.present = true;
  user.digest = "0123456789abcdef";
  user.turn = 1;
  user.source = SourceKind::kToolOutput;
  user.source_id = "find_user#c1";
  user.verified = true;
  EntryRead missing;
  missing.category = Category::kFact;
  missing.key = "order.#W1.refunded";
  auth.reads = {user, missing};
  d.rules = {auth, RuleResult{"retail.amount", "allow", "under the limit", false, {}, {}}};
  return d;
}

CommandSpec TypedSpec(const RunId& run, const std::string& step, const DecisionRecord& record) {
  CommandSpec spec = SpecFor(run, step);
  spec.decision = CommandDecision(std::make_shared<const DecisionRecord>(record));
  return spec;
}

std::unique_ptr<CommandStore> OpenStore(const std::string& url) {
  RedisOptions options;
  options.url = url;
  auto store = OpenRedisCommandStore(options);
  if (!store) FAIL("cannot open the Redis command store: " << store.error().ToString());
  return std::move(store).value();
}

// What the store keeps and reads back for a command reserved with `record`.
void CheckKeptApart(const std::string& url, CommandStore& store, const Command& c,
                    const DecisionRecord& record) {
  std::string bytes;
  AppendDecisionBytes(record, bytes);
  const std::vector<uint8_t> tree = nlohmann::json::to_cbor(EncodeDecision(record));
  CHECK(bytes == std::string(tree.begin(), tree.end()));
  CHECK(RunOn(url, CommandHashKey(c), {"HGET", CommandHashKey(c), "decision"}) == bytes);
  const auto spec =
      nlohmann::json::parse(RunOn(url, CommandHashKey(c), {"HGET", CommandHashKey(c), "spec"}));
  CHECK_FALSE(spec.contains("decision"));
  auto read = store.Get(c.run, c.command_key);
  REQUIRE(read.has_value());
  REQUIRE(read->decision.typed() != nullptr);
  CHECK(*read->decision.typed() == record);
  CHECK(EncodeCommand(*read)["decision"] == EncodeDecision(record));
  CHECK(*read == c);
  // Another process (no cache) lists it the same.
  auto listed = OpenStore(url)->ListCommands(c.run);
  REQUIRE(listed.has_value());
  REQUIRE(listed->size() == 1);
  CHECK(listed->front() == c);
}

}  // namespace

TEST_CASE("redis command store: a typed decision is kept as the bytes its turn keeps",
          std::string("[commands][redis][") + kKind + "]") {
  const std::string url = Url();
  auto store = OpenStore(url);
  const RunId run = FreshRun("apart");

  SECTION("reserve") {
    const DecisionRecord record = Record(run, "c1");
    auto initial = NewCommand(TypedSpec(run, "r", record), kNow);
    REQUIRE(initial.has_value());
    auto reserved = store->Reserve(*initial);
    REQUIRE(reserved.has_value());
    CheckKeptApart(url, *store, reserved->command, record);
    // Its lease and settle (whole replies through the spec cache) keep it.
    auto leased = store->Apply(ValidRequest(reserved->command, T::kLease));
    REQUIRE(leased.has_value());
    auto done = OpenStore(url)->Apply(ValidRequest(*leased, T::kSucceed));
    REQUIRE(done.has_value());
    CHECK(done->decision == reserved->command.decision);
    CheckKeptApart(url, *store, *done, record);
  }
  SECTION("reserve and lease") {
    const DecisionRecord record = Record(run, "c2");
    auto initial = NewCommand(TypedSpec(run, "rl", record), kNow);
    REQUIRE(initial.has_value());
    auto leased = store->ReserveAndLease(*initial, ValidRequest(*initial, T::kLease));
    REQUIRE(leased.has_value());
    REQUIRE(leased->leased);
    CheckKeptApart(url, *store, leased->command, record);
  }
  SECTION("a record with text that is not UTF-8 stays in the spec, replaced") {
    DecisionRecord record = Record(run, "c4");
    record.reason = "bad \xff byte";
    auto initial = NewCommand(TypedSpec(run, "bad", record), kNow);
    REQUIRE(initial.has_value());
    auto leased = store->ReserveAndLease(*initial, ValidRequest(*initial, T::kLease));
    REQUIRE(leased.has_value());
    REQUIRE(leased->created);
    REQUIRE(leased->leased);
    const std::string key = CommandHashKey(*initial);
    CHECK(RunOn(url, key, {"HEXISTS", key, "decision"}) == "0");
    auto read = OpenStore(url)->Get(run, initial->command_key);
    REQUIRE(read.has_value());
    CHECK(read->decision.Json()["reason"] == "bad \xef\xbf\xbd byte");
    CHECK(*read == leased->command);  // the answer is what is stored, not what was asked
  }
  SECTION("commit, reserve and lease: the turn's bytes") {
    RedisOptions options;
    options.url = url;
    auto turns = OpenRedisStore(options);
    REQUIRE(turns.has_value());
    auto ledger = Ledger::Open(**turns, ConversationId{run.tenant, run.run});
    REQUIRE(ledger.has_value());
    const DecisionRecord record = Record(run, "c3");
    (*ledger)->StageDecision(record);
    auto initial = NewCommand(TypedSpec(run, "crl", record), kNow);
    REQUIRE(initial.has_value());
    std::optional<CommitReserveResult> carried;
    size_t at = std::string_view::npos;
    std::string bytes;
    AppendDecisionBytes(record, bytes);
    auto version = (*ledger)->CommitVia([&](const EncodedCommit& commit) -> Result<CarriedCommit> {
      at = commit.turn.find(bytes);
      auto done = store->CommitReserveAndLease(commit, *initial, ValidRequest(*initial, T::kLease));
      if (!done) return done.error();
      carried = *done;
      return done->commit;
    });
    REQUIRE(version.has_value());
    REQUIRE(carried.has_value());
    REQUIRE(carried->reserve.leased);
    REQUIRE(at != std::string_view::npos);  // the turn holds the record's very bytes
    CheckKeptApart(url, *store, carried->reserve.command, record);
    auto turn = (*turns)->ReadTurns(ConversationId{run.tenant, run.run}, 1, 1);
    REQUIRE(turn.has_value());
    REQUIRE(turn->front().decisions.size() == 1);
    CHECK(turn->front().decisions.front() == record);
  }
}

TEST_CASE("redis command store: a hash with its decision inside the spec (0.1, main) reads back",
          std::string("[commands][redis][") + kKind + "]") {
  const std::string url = Url();
  auto store = OpenStore(url);
  const RunId run = FreshRun("inside");
  const DecisionRecord record = Record(run, "c1");
  auto initial = NewCommand(TypedSpec(run, "old", record), kNow);
  REQUIRE(initial.has_value());
  initial->seq = 1;
  // As main's tlc_reserve stored it: the spec text with the decision JSON in it.
  const std::string key = CommandHashKey(*initial);
  const internal::CommandKeys keys = internal::KeysOfRun(run);
  const std::string spec = EncodeCommand(*initial).dump();
  REQUIRE(spec.find("\"decision\":{\"args_hash\":\"9f2c\"") != std::string::npos);
  const std::string now = std::to_string(kNow);
  REQUIRE(RunOn(url, key,
                {"HSET",
                 key,
                 "command_key",
                 initial->command_key,
                 "spec",
                 spec,
                 "state",
                 "pending",
                 "seq",
                 "1",
                 "attempts",
                 "0",
                 "fencing_token",
                 "0",
                 "lease_owner",
                 "",
                 "lease_expires_ms",
                 "0",
                 "created_ms",
                 now,
                 "updated_ms",
                 now}) == "10");
  REQUIRE(RunOn(url, keys.order, {"ZADD", keys.order, "1", initial->command_key}) == "1");
  REQUIRE(RunOn(url, keys.meta, {"HSET", keys.meta, "next_seq", "1"}) == "1");

  auto read = store->Get(run, initial->command_key);
  REQUIRE(read.has_value());
  CHECK(read->decision.typed() == nullptr);  // read as the JSON it is
  CHECK(read->decision.Json() == EncodeDecision(record));
  CHECK(read->decision == initial->decision);
  CHECK(*read == *initial);
  auto listed = store->ListCommands(run);
  REQUIRE(listed.has_value());
  REQUIRE(listed->size() == 1);
  CHECK(listed->front() == *initial);

  // The same call (typed decision) names it again; it runs to its end and
  // keeps its decision where it was.
  auto again = store->ReserveAndLease(*initial, ValidRequest(*initial, T::kLease));
  REQUIRE(again.has_value());
  CHECK_FALSE(again->created);
  REQUIRE(again->leased);
  CHECK(again->command.decision.Json() == EncodeDecision(record));
  auto done = store->Apply(ValidRequest(again->command, T::kSucceed));
  REQUIRE(done.has_value());
  CHECK(done->state == CommandState::kSucceeded);
  CHECK(RunOn(url, key, {"HEXISTS", key, "decision"}) == "0");
  auto settled = OpenStore(url)->Get(run, initial->command_key);
  REQUIRE(settled.has_value());
  CHECK(*settled == *done);
  CHECK(settled->decision.Json() == EncodeDecision(record));
}

#ifndef TASKLEDGER_CLUSTER_TESTS
TEST_CASE("redis command store: a session's write sends its decision once, inside the turn",
          "[commands][redis]") {
  OwnRedis own = OwnRedisCommandStore();
  const RunId run = FreshRun("once");
  auto turns = OpenRedisStore(own.options);
  REQUIRE(turns.has_value());
  auto ledger = Ledger::Open(**turns, ConversationId{run.tenant, run.run});
  REQUIRE(ledger.has_value());
  const DecisionRecord record = Record(run, "c1");
  (*ledger)->StageDecision(record);
  auto initial = NewCommand(TypedSpec(run, "w", record), kNow);
  REQUIRE(initial.has_value());
  std::string bytes;
  AppendDecisionBytes(record, bytes);
  size_t at = std::string_view::npos;
  REQUIRE(own.server->Run({"CONFIG", "SET", "slowlog-log-slower-than", "0"}) == "OK");
  REQUIRE(own.server->Run({"SLOWLOG", "RESET"}) == "OK");
  auto version = (*ledger)->CommitVia([&](const EncodedCommit& commit) -> Result<CarriedCommit> {
    at = commit.turn.find(bytes);
    auto done =
        own.commands->CommitReserveAndLease(commit, *initial, ValidRequest(*initial, T::kLease));
    if (!done) return done.error();
    return done->commit;
  });
  REQUIRE(version.has_value());
  REQUIRE(at != std::string_view::npos);
  // SLOWLOG keeps each call's arguments: the FCALL's last three are no bytes,
  // the offset of the record in the turn and its length.
  const std::string log = own.server->Run({"SLOWLOG", "GET", "50"});
  REQUIRE(log.find("tlc_commit_reserve_lease2") != std::string::npos);
  CHECK(log.find("\n" + std::to_string(kLeaseMs) + "\n\n" + std::to_string(at) + "\n" +
                 std::to_string(bytes.size()) + "\n") != std::string::npos);
  CHECK(own.server->Run({"HGET", CommandHashKey(*initial), "decision"}) == bytes);
}

TEST_CASE(
    "redis command store: the decision functions refuse a reference outside the turn and "
    "load over a library without them",
    "[commands][redis]") {
  OwnRedis own = OwnRedisCommandStore();
  const RunId run = FreshRun("lib");
  const internal::CommandKeys keys = internal::KeysOfRun(run);
  const std::string cmd = keys.Command("k");
  const std::string stream = "tl:{x}:stream";  // never written: the check comes first
  const std::string refused = own.server->Run({"FCALL",    "tlc_commit_reserve_lease2",
                                               "4",        stream,
                                               cmd,        keys.meta,
                                               keys.order, "0",
                                               "",         "turn-bytes",
                                               "",         "k",
                                               "{}",       "pending",
                                               "1",        "1",
                                               "w",        "10",
                                               "",         "5",
                                               "6"});
  CHECK(refused.find("TLARG the decision is not within the turn") != std::string::npos);
  CHECK(own.server->Run({"EXISTS", cmd}) == "0");

  // A server holding a library without the functions this release calls
  // (an earlier release loaded its own): the call loads this one and lands.
  std::string earlier = internal::CommandFunctionLibrary().source;
  for (const std::string name : {"'tlc_reserve2'", "'tlc_reserve_lease2'"}) {
    const size_t pos = earlier.find(name);
    REQUIRE(pos != std::string::npos);
    earlier.replace(pos, name.size(), "'tlc_gone" + std::to_string(pos) + "'");
  }
  REQUIRE(own.server->Run({"FUNCTION", "LOAD", "REPLACE", earlier}) == "taskledger_commands");
  const DecisionRecord record = Record(run, "c1");
  auto initial = NewCommand(TypedSpec(run, "s", record), kNow);
  REQUIRE(initial.has_value());
  auto reserved = own.commands->Reserve(*initial);
  REQUIRE(reserved.has_value());
  CheckKeptApart(own.options.url, *own.commands, reserved->command, record);
}
#endif

}  // namespace taskledger::testing
