// A session's write-ahead turn commit carried by the command store: the
// ledger's commit, the command's reservation and its lease in one FCALL
// (tlc_commit_reserve_lease, through Ledger::CommitVia), on a real Redis and,
// in the cluster build, on a real Redis Cluster. Each case checks both sides
// as a reader would find them afterwards: the conversation's head and state,
// and the command record; and a conversation written by the previous
// tl_commit continues through it. Single-threaded.
#include <catch2/catch.hpp>

#include "command_test_support.h"
#include "taskledger/commands/command_ledger.h"
#include "taskledger/ledger/ledger.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/ledger/redis_store.h"

namespace taskledger::testing {
namespace {

using S = CommandState;

#ifdef TASKLEDGER_CLUSTER_TESTS
constexpr const char* kKind = "cluster";
std::string CarryUrl() { return SharedRedisClusterUrl(); }
#else
constexpr const char* kKind = "redis";
std::string CarryUrl() { return SharedRedisUrl(); }
#endif

std::unique_ptr<Store> OpenTurnStore(const std::string& url) {
  RedisOptions options;
  options.url = url;
  auto store = OpenRedisStore(options);
  if (!store) FAIL("cannot open the Redis store: " << store.error().ToString());
  return std::move(store).value();
}

std::unique_ptr<Ledger> OpenLedger(Store& store, const RunId& run) {
  auto ledger = Ledger::Open(store, ConversationId{run.tenant, run.run});
  if (!ledger) FAIL("cannot open the ledger: " << ledger.error().ToString());
  return std::move(ledger).value();
}

Update Fact(const std::string& key, int value) {
  Update u;
  u.op = UpdateOp::kSet;
  u.category = Category::kFact;
  u.key = key;
  u.value = value;
  u.provenance.source = SourceKind::kToolOutput;
  u.provenance.source_id = "lookup#c1";
  u.provenance.verified = true;
  return u;
}

// What one CommitVia through the command ledger did.
struct Carried {
  Result<std::optional<uint64_t>> version = Status::Internal("not run");
  std::optional<CommitReserveResult> store;  // the command store's answer
};

Carried CommitReserveLease(Ledger& ledger, CommandLedger& commands, const CommandSpec& spec) {
  Carried out;
  out.version = ledger.CommitVia([&](const EncodedCommit& commit) -> Result<CarriedCommit> {
    auto done = commands.CommitReserveAndLease(commit, spec);
    if (!done) return done.error();
    out.store = *done;
    return done->commit;
  });
  return out;
}

CommandLedgerOptions Worker(const std::string& id) {
  CommandLedgerOptions o;
  o.worker_id = id;
  o.lease_ms = kLeaseMs;
  return o;
}

// tl_commit as servers held it before its checks and writes were split
// (commit 26ae721): what their conversations were written with.
constexpr const char* kPreviousLedgerLibrary = R"LUA(#!lua name=taskledger_ledger

local function commit(keys, args)
  local key, base = keys[1], tonumber(args[1])
  local retention, turn, snapshot = args[2], args[3], args[4]
  if base == nil or base < 0 or turn == nil then
    return redis.error_reply('ERR tl_commit: usage: base retention turn [snapshot]')
  end
  local head = redis.call('XLEN', key)
  local id = string.format('0-%d', base + 1)
  if head ~= base then
    if head > base then
      local entry = redis.call('XRANGE', key, id, id)[1]
      if entry and entry[2][1] == 't' and entry[2][2] == turn then return base + 1 end
    elseif head == 0 then
      return redis.error_reply('TLGONE the conversation does not exist')
    end
    return redis.error_reply(string.format('TLCONFLICT %d', head))
  end
  local added
  if snapshot then
    added = redis.pcall('XADD', key, id, 't', turn, 's', snapshot)
  else
    added = redis.pcall('XADD', key, id, 't', turn)
  end
  if type(added) == 'table' and added.err then
    return redis.error_reply(string.format('TLCORRUPT %d entries but XADD %s refused: %s', head, id, added.err))
  end
  if retention ~= '' then
    redis.call('PEXPIRE', key, retention)
  else
    redis.call('PERSIST', key)
  end
  return base + 1
end

redis.register_function('tl_commit', commit)
)LUA";

}  // namespace

TEST_CASE("a conversation written by the previous tl_commit continues through the carried commit",
          "[commands][redis]") {
  RedisOptions snapshots;
  snapshots.store.snapshot_every = 2;  // snapshots written by the old function too
  OwnRedis own = OwnRedisServer(snapshots);
  RedisServer* server = own.server.get();
  const RedisOptions& options = own.options;
  auto turns = OpenRedisStore(options);
  REQUIRE(turns.has_value());
  // The server goes back to the previous library; turns 2..5 are written
  // with it. (Turn 1 goes to tl_commit2, which that library lacks: the
  // writer loads its own for it, and the test loads the previous one again.)
  const RunId run{"acme", "old-conversation"};
  const ConversationId id{run.tenant, run.run};
  auto ledger = OpenLedger(**turns, run);
  for (int i = 1; i <= 5; ++i) {
    if (i <= 2) {
      REQUIRE(server->Run({"FUNCTION", "LOAD", "REPLACE", kPreviousLedgerLibrary}) ==
              "taskledger_ledger");
    }
    REQUIRE(ledger->Stage(Fact("old-" + std::to_string(i), i)).ok());
    REQUIRE(ledger->Commit().has_value());
  }
  REQUIRE(server->Run({"FUNCTION", "LIST", "LIBRARYNAME", "taskledger_ledger", "WITHCODE"})
              .find("commit_check") == std::string::npos);
  // A command store (and its library) arrives; the next write is carried.
  auto commands = OpenRedisCommandStore(options);
  REQUIRE(commands.has_value());
  CommandLedger worker(**commands, SystemClock(), Worker("worker-a"));
  REQUIRE(ledger->Stage(Fact("carried", 6)).ok());
  Carried carried = CommitReserveLease(*ledger, worker, SpecFor(run, "after-upgrade"));
  REQUIRE(carried.version.has_value());
  CHECK(*carried.version == std::optional<uint64_t>(6));
  CHECK(carried.store->reserve.leased);
  // A store opened now loads the current ledger library and reads it all back.
  auto reopened = OpenRedisStore(options);
  REQUIRE(reopened.has_value());
  auto state = (*reopened)->ReadHead(id);
  REQUIRE(state.has_value());
  CHECK(state->version == 6);
  for (int i = 1; i <= 5; ++i) {
    const Entry* e = state->of(Category::kFact).get("old-" + std::to_string(i));
    REQUIRE(e != nullptr);
    CHECK(e->value == i);
  }
  CHECK(state->of(Category::kFact).contains("carried"));
  auto v3 = (*reopened)->ReadVersion(id, 3);
  REQUIRE(v3.has_value());
  CHECK(v3->of(Category::kFact).contains("old-3"));
  CHECK_FALSE(v3->of(Category::kFact).contains("old-4"));
  auto again = OpenLedger(**reopened, run);
  REQUIRE(again->Stage(Fact("new", 7)).ok());
  CHECK(again->Commit().has_value());
  CHECK(*(*reopened)->Head(id) == 7);
}

TEST_CASE("a write-ahead commit, reserve and lease are one step that writes all or nothing",
          "[commands][redis]") {
  const std::string url = CarryUrl();
  auto turns = OpenTurnStore(url);
  auto commands = MakeCommandStore(kKind);
  REQUIRE_FALSE(turns->CommitCarrierId().empty());
  REQUIRE(turns->CommitCarrierId() == commands->TurnCommitCarrierId());
  const RunId run = FreshRun("carry");
  const ConversationId id{run.tenant, run.run};
  auto ledger = OpenLedger(*turns, run);
  CommandLedger worker_a(*commands, SystemClock(), Worker("worker-a"));
  CommandLedger worker_b(*commands, SystemClock(), Worker("worker-b"));

  // A new command: the turn lands as version 1, the command is created leased.
  REQUIRE(ledger->Stage(Fact("first", 1)).ok());
  Carried first = CommitReserveLease(*ledger, worker_a, SpecFor(run, "new"));
  REQUIRE(first.version.has_value());
  CHECK(*first.version == std::optional<uint64_t>(1));
  REQUIRE(first.store.has_value());
  CHECK(first.store->commit.committed);
  CHECK(first.store->reserve.created);
  CHECK(first.store->reserve.leased);
  const Command leased = first.store->reserve.command;
  CHECK(leased.state == S::kLeased);
  CHECK(leased.lease_owner == "worker-a");
  CHECK(leased.attempts == 1);
  CHECK(*commands->Get(run, leased.command_key) == leased);
  CHECK(*turns->Head(id) == 1);
  auto head = turns->ReadHead(id);
  REQUIRE(head.has_value());
  CHECK(head->of(Category::kFact).contains("first"));
  CHECK(ledger->version() == 1);
  CHECK_FALSE(ledger->has_pending());
  // The turn created the conversation with an incarnation, as tl_commit2
  // does: its creator knows it, so a reader holding this head catches up.
  const HeadRead held = ledger->known_head();
  CHECK(held.incarnation.size() == 32);

  // A command already reserved and pending: leased, not created again.
  auto pending = commands->Reserve(*NewCommand(SpecFor(run, "pending"), kNow));
  REQUIRE(pending.has_value());
  REQUIRE(ledger->Stage(Fact("second", 2)).ok());
  Carried second = CommitReserveLease(*ledger, worker_a, SpecFor(run, "pending"));
  REQUIRE(second.version.has_value());
  CHECK(*second.version == std::optional<uint64_t>(2));
  CHECK_FALSE(second.store->reserve.created);
  CHECK(second.store->reserve.leased);
  CHECK(second.store->reserve.command.seq == pending->command.seq);
  CHECK(*turns->Head(id) == 2);
  auto caught_up = Ledger::Open(*turns, id, SystemClock(), held);
  REQUIRE(caught_up.has_value());
  CHECK((*caught_up)->opened_from_known());
  CHECK((*caught_up)->head() == *turns->ReadHead(id));

  // Leased by another worker: refused, and the turn is not committed either.
  REQUIRE(ledger->Stage(Fact("third", 3)).ok());
  Carried refused = CommitReserveLease(*ledger, worker_b, SpecFor(run, "new"));
  REQUIRE(refused.version.has_value());
  CHECK_FALSE(refused.version->has_value());
  CHECK_FALSE(refused.store->commit.committed);
  CHECK_FALSE(refused.store->reserve.leased);
  CHECK(refused.store->reserve.command == leased);
  CHECK(*commands->Get(run, leased.command_key) == leased);
  CHECK(*turns->Head(id) == 2);
  CHECK(ledger->version() == 2);
  CHECK(ledger->has_pending());  // still staged, for the caller's own path

  // Approved by an operator: not leased here (the approval goes into the
  // turn first, then the caller leases it on its own), nothing written.
  auto blocked = commands->Reserve(*NewCommand(SpecFor(run, "approval", true), kNow));
  REQUIRE(blocked.has_value());
  auto approved = commands->Apply(ValidRequest(blocked->command, Transition::kApprove));
  REQUIRE(approved.has_value());
  Carried waiting = CommitReserveLease(*ledger, worker_a, SpecFor(run, "approval", true));
  REQUIRE(waiting.version.has_value());
  CHECK_FALSE(waiting.version->has_value());
  CHECK(waiting.store->reserve.command == *approved);
  CHECK(*turns->Head(id) == 2);

  // The same turn again, now that the way is clear: it lands as version 3.
  Carried later = CommitReserveLease(*ledger, worker_a, SpecFor(run, "later"));
  REQUIRE(later.version.has_value());
  CHECK(*later.version == std::optional<uint64_t>(3));
  CHECK(turns->ReadHead(id)->of(Category::kFact).contains("third"));

  // A commit conflict (another writer took version 4): no command is created.
  auto other = OpenLedger(*turns, run);
  REQUIRE(other->Stage(Fact("other", 4)).ok());
  REQUIRE(other->Commit().has_value());
  REQUIRE(ledger->Stage(Fact("stale", 5)).ok());
  Carried conflict = CommitReserveLease(*ledger, worker_a, SpecFor(run, "conflict"));
  REQUIRE_FALSE(conflict.version.has_value());
  CHECK(conflict.version.error().code() == StatusCode::kConflict);
  CHECK(conflict.version.error().message().find("is at version 4") != std::string::npos);
  auto absent = commands->Get(run, NewCommand(SpecFor(run, "conflict"), kNow)->command_key);
  REQUIRE_FALSE(absent.has_value());
  CHECK(absent.error().code() == StatusCode::kNotFound);
  CHECK(*turns->Head(id) == 4);
  CHECK(ledger->has_pending());

  // A lease request without an owner is refused before anything is written.
  REQUIRE(ledger->Rebase().ok());
  TransitionRequest no_owner;
  no_owner.transition = Transition::kLease;
  no_owner.lease_ms = kLeaseMs;
  no_owner.now_ms = kNow;
  auto unowned = ledger->CommitVia([&](const EncodedCommit& commit) -> Result<CarriedCommit> {
    auto done = commands->CommitReserveAndLease(commit, *NewCommand(SpecFor(run, "no-owner"), kNow),
                                                no_owner);
    if (!done) return done.error();
    return done->commit;
  });
  REQUIRE_FALSE(unowned.has_value());
  CHECK(unowned.error().code() == StatusCode::kInvalidArgument);
  CHECK(*turns->Head(id) == 4);
  CHECK(commands->ListCommands(run)->size() == 4);  // new, pending, approval, later
}

TEST_CASE("a carried commit sent again after it landed is not appended twice",
          "[commands][redis]") {
  const std::string url = CarryUrl();
  auto turns = OpenTurnStore(url);
  auto commands = MakeCommandStore(kKind);
  const RunId run = FreshRun("carry-retry");
  const ConversationId id{run.tenant, run.run};
  auto ledger = OpenLedger(*turns, run);
  CommandLedger worker(*commands, SystemClock(), Worker("worker-a"));
  REQUIRE(ledger->Stage(Fact("once", 1)).ok());
  // The first attempt lands but its answer is "lost"; the second finds its
  // own bytes at version 1 and reserves and leases the next command.
  std::optional<CommitReserveResult> retried;
  auto version = ledger->CommitVia([&](const EncodedCommit& commit) -> Result<CarriedCommit> {
    auto lost = worker.CommitReserveAndLease(commit, SpecFor(run, "lost"));
    REQUIRE(lost.has_value());
    REQUIRE(lost->commit.committed);
    auto again = worker.CommitReserveAndLease(commit, SpecFor(run, "again"));
    if (!again) return again.error();
    retried = *again;
    return again->commit;
  });
  REQUIRE(version.has_value());
  CHECK(*version == std::optional<uint64_t>(1));
  REQUIRE(retried.has_value());
  CHECK(retried->reserve.leased);
  CHECK(*turns->Head(id) == 1);
  auto turns_read = turns->ReadTurns(id, 1, 1);
  REQUIRE(turns_read.has_value());
  CHECK(turns_read->size() == 1);
  CHECK(turns->ReadHead(id)->of(Category::kFact).contains("once"));
}

TEST_CASE("stores that cannot carry a commit say so and keep the two-call path",
          "[commands][redis]") {
  auto memory_turns = NewMemoryStore();
  CHECK(memory_turns->CommitCarrierId().empty());
  auto memory_commands = MakeCommandStore("memory");
  CHECK(memory_commands->TurnCommitCarrierId().empty());
  const RunId run = FreshRun("no-carry");
  auto refused = memory_commands->CommitReserveAndLease(
      EncodedCommit{}, *NewCommand(SpecFor(run, "m"), kNow), TransitionRequest{});
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code() == StatusCode::kFailedPrecondition);
  CHECK(memory_commands->ListCommands(run)->empty());
  auto ledger = OpenLedger(*memory_turns, run);
  auto via = ledger->CommitVia([](const EncodedCommit&) -> Result<CarriedCommit> {
    return CarriedCommit{true, {}};
  });
  REQUIRE_FALSE(via.has_value());
  CHECK(via.error().code() == StatusCode::kFailedPrecondition);
  CHECK(ledger->version() == 0);

  // A Redis store that waits for replicas acknowledges nothing it did not wait for.
  RedisOptions waiting;
  waiting.url = CarryUrl();
  waiting.replicas = 1;
  auto replicated = OpenRedisStore(waiting);
  REQUIRE(replicated.has_value());
  CHECK((*replicated)->CommitCarrierId().empty());
  auto replicated_commands = OpenRedisCommandStore(waiting);
  REQUIRE(replicated_commands.has_value());
  CHECK((*replicated_commands)->TurnCommitCarrierId().empty());
}

}  // namespace taskledger::testing
