// The CommandStore contract, run on the in-memory and the Redis store alike:
// reservation is unique per (run, command_key); every allowed transition lands
// in its target state; every forbidden one is refused and changes nothing;
// fencing tokens stop a worker whose lease was taken over; guards (evidence,
// lease expiry, attempt budget) hold; journal positions and run status are
// written once / by compare-and-set.
#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "command_test_support.h"
#include "taskledger/commands/command_transition.h"

using namespace taskledger;
using namespace taskledger::testing;
using S = CommandState;

// The cluster build of this file (ctest label `cluster`) runs every case on
// a 3-primary Redis Cluster instead.
#ifdef TASKLEDGER_CLUSTER_TESTS
#define TL_COMMAND_STORES GENERATE(std::string("cluster"))
#else
#define TL_COMMAND_STORES GENERATE(std::string("memory"), std::string("redis"))
#endif

namespace {

constexpr S kAllStates[] = {S::kPending,   S::kBlocked, S::kApproved,  S::kLeased,
                            S::kSucceeded, S::kFailed,  S::kUncertain, S::kCancelled};

bool Allowed(Transition t, S from) {
  for (S s : TransitionSources(t)) {
    if (s == from) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("reserving the same logical command returns the existing record", "[commands]") {
  auto kind = TL_COMMAND_STORES;
  auto store = MakeCommandStore(kind);
  RunId run = FreshRun("reserve");
  auto first = store->Reserve(*NewCommand(SpecFor(run, "refund-1"), kNow));
  REQUIRE(first.has_value());
  CHECK(first->created);
  CHECK(first->command.seq == 1);
  CHECK(first->command.state == S::kPending);

  // Same step/tool/target/arguments, keys in another order and 12.5 vs 12.50: same command.
  CommandSpec again = SpecFor(run, "refund-1");
  again.call.arguments = {{"amount", 12.50}, {"order_id", "refund-1"}};
  auto second = store->Reserve(*NewCommand(again, kNow + 5));
  REQUIRE(second.has_value());
  CHECK_FALSE(second->created);
  CHECK(second->command == first->command);

  auto other = store->Reserve(*NewCommand(SpecFor(run, "refund-2"), kNow));
  REQUIRE(other.has_value());
  CHECK(other->created);
  CHECK(other->command.seq == 2);
  auto all = store->ListCommands(run);
  REQUIRE(all.has_value());
  REQUIRE(all->size() == 2);
  CHECK((*all)[0].command_key == first->command.command_key);
  CHECK(first->command.idempotency_key.find(first->command.command_key) != std::string::npos);
  auto runs = store->ListRuns(run.tenant);
  REQUIRE(runs.has_value());
  CHECK(std::find(runs->begin(), runs->end(), run.run) != runs->end());
}

TEST_CASE("every transition from every state: allowed ones land, forbidden ones change nothing",
          "[commands]") {
  auto kind = TL_COMMAND_STORES;
  auto store = MakeCommandStore(kind);
  RunId run = FreshRun("matrix");
  int allowed = 0, refused = 0;
  for (int ti = 0; ti < kTransitionCount; ++ti) {
    auto t = static_cast<Transition>(ti);
    for (S from : kAllStates) {
      std::string step = std::string(TransitionName(t)) + "-" + std::string(CommandStateName(from));
      Command before = DriveTo(*store, run, from, step);
      auto result = store->Apply(ValidRequest(before, t));
      INFO(kind << ": " << TransitionName(t) << " from " << CommandStateName(from) << " -> "
                << result.status().ToString());
      auto after = store->Get(run, before.command_key);
      REQUIRE(after.has_value());
      if (Allowed(t, from)) {
        ++allowed;
        REQUIRE(result.has_value());
        CHECK(result->state == TransitionTarget(t));
        CHECK(*after == *result);
      } else {
        ++refused;
        REQUIRE_FALSE(result.has_value());
        CHECK(result.error().code() == StatusCode::kFailedPrecondition);
        CHECK(*after == before);
      }
    }
  }
  CHECK(allowed == 17);
  CHECK(refused == kTransitionCount * 8 - 17);
}

TEST_CASE("a worker whose lease was taken over cannot record an outcome", "[commands]") {
  auto kind = TL_COMMAND_STORES;
  auto store = MakeCommandStore(kind);
  RunId run = FreshRun("fencing");
  Command a = DriveTo(*store, run, S::kLeased);
  CHECK(a.fencing_token == 1);
  CHECK(a.attempts == 1);

  // A's lease expires; B reclaims the command through uncertain -> pending -> leased.
  TransitionRequest expire = ValidRequest(a, Transition::kExpireLease);
  expire.owner = "worker-b";
  expire.now_ms = a.lease_expires_ms - 1;
  auto early = store->Apply(expire);
  REQUIRE_FALSE(early.has_value());
  CHECK(early.error().code() == StatusCode::kFailedPrecondition);  // still A's live lease
  Command b = TakeOver(*store, a, "worker-b", a.lease_expires_ms);
  CHECK(b.fencing_token == 2);
  CHECK(b.attempts == 2);

  // A comes back with its old token: fenced, nothing changes.
  for (Transition t :
       {Transition::kSucceed, Transition::kFail, Transition::kMarkUncertain, Transition::kRenew}) {
    TransitionRequest late = ValidRequest(a, t);
    late.fencing_token = a.fencing_token;
    auto refused = store->Apply(late);
    INFO(TransitionName(t));
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code() == StatusCode::kConflict);
    CHECK(*store->Get(run, a.command_key) == b);
  }
  // B's outcome is accepted.
  auto done = store->Apply(ValidRequest(b, Transition::kSucceed));
  REQUIRE(done.has_value());
  CHECK(done->state == S::kSucceeded);
  CHECK(done->external_id == "ext-1");
  CHECK(done->completed_seq == 1);
}

TEST_CASE("reserve and lease in one step leases only a ready command", "[commands]") {
  auto kind = TL_COMMAND_STORES;
  auto store = MakeCommandStore(kind);
  RunId run = FreshRun("reserve-lease");
  TransitionRequest lease;
  lease.transition = Transition::kLease;
  lease.owner = "worker-a";
  lease.lease_ms = kLeaseMs;
  lease.now_ms = kNow + 1;

  // New: reserved and leased at once.
  auto first = store->ReserveAndLease(*NewCommand(SpecFor(run, "rl-1"), kNow), lease);
  REQUIRE(first.has_value());
  CHECK(first->created);
  CHECK(first->leased);
  CHECK(first->command.state == S::kLeased);
  CHECK(first->command.seq == 1);
  CHECK(first->command.attempts == 1);
  CHECK(first->command.fencing_token == 1);
  CHECK(first->command.lease_owner == "worker-a");
  CHECK(first->command.lease_expires_ms == kNow + 1 + kLeaseMs);
  CHECK(*store->Get(run, first->command.command_key) == first->command);

  // Found leased (another worker's live lease): returned as it is.
  lease.owner = "worker-b";
  auto again = store->ReserveAndLease(*NewCommand(SpecFor(run, "rl-1"), kNow), lease);
  REQUIRE(again.has_value());
  CHECK_FALSE(again->created);
  CHECK_FALSE(again->leased);
  CHECK(again->command == first->command);

  // Needs approval: reserved blocked, not leased; once approved, leased.
  auto blocked = store->ReserveAndLease(*NewCommand(SpecFor(run, "rl-2", true), kNow), lease);
  REQUIRE(blocked.has_value());
  CHECK(blocked->created);
  CHECK_FALSE(blocked->leased);
  CHECK(blocked->command.state == S::kBlocked);
  CHECK(blocked->command.seq == 2);
  REQUIRE(store->Apply(ValidRequest(blocked->command, Transition::kApprove)).has_value());
  auto approved = store->ReserveAndLease(*NewCommand(SpecFor(run, "rl-2", true), kNow), lease);
  REQUIRE(approved.has_value());
  CHECK(approved->leased);
  CHECK(approved->command.state == S::kLeased);
  CHECK(approved->command.approver == "alice");

  // A lease request without an owner is refused and writes nothing.
  lease.owner.clear();
  auto refused = store->ReserveAndLease(*NewCommand(SpecFor(run, "rl-3"), kNow), lease);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code() == StatusCode::kInvalidArgument);
  CHECK(store->ListCommands(run)->size() == 2);
}

TEST_CASE("interleaved writes each settle their own command, spec and all", "[commands]") {
  // Two writers' commands in turn: each transition's reply is the command it
  // moved (tool, target, arguments, decision), never the one before it.
  auto kind = TL_COMMAND_STORES;
  auto store = MakeCommandStore(kind);
  RunId run = FreshRun("interleaved");
  TransitionRequest lease;
  lease.transition = Transition::kLease;
  lease.owner = "worker-a";
  lease.lease_ms = kLeaseMs;
  lease.now_ms = kNow + 1;
  CommandSpec spec_b = SpecFor(run, "il-b");
  spec_b.call.tool = "ship_order";
  spec_b.call.arguments = {{"order_id", "il-b"}, {"express", true}};
  auto a = store->ReserveAndLease(*NewCommand(SpecFor(run, "il-a"), kNow), lease);
  auto b = store->ReserveAndLease(*NewCommand(spec_b, kNow), lease);
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  auto settled_a = store->Apply(ValidRequest(a->command, Transition::kSucceed));
  REQUIRE(settled_a.has_value());
  CHECK(settled_a->call.tool == "issue_refund");
  CHECK(settled_a->target == "order:il-a");
  CHECK(settled_a->call.arguments == nlohmann::json({{"order_id", "il-a"}, {"amount", 12.5}}));
  CHECK(settled_a->state == S::kSucceeded);
  auto settled_b = store->Apply(ValidRequest(b->command, Transition::kSucceed));
  REQUIRE(settled_b.has_value());
  CHECK(settled_b->call.tool == "ship_order");
  CHECK(settled_b->call.arguments == spec_b.call.arguments);
  CHECK(settled_b->state == S::kSucceeded);
  // The same command read back equals what its settle returned.
  CHECK(*store->Get(run, a->command.command_key) == *settled_a);
  CHECK(*store->Get(run, b->command.command_key) == *settled_b);
}

TEST_CASE("a reservation returns the command as it reads back, odd arguments too", "[commands]") {
  // What a reserve returns is what Get reads from the store afterwards
  // (the Redis store decodes the reply's spec from the JSON it sent, not from
  // the text it read back, when the two are the same).
  auto kind = TL_COMMAND_STORES;
  auto store = MakeCommandStore(kind);
  RunId run = FreshRun("odd-args");
  TransitionRequest lease;
  lease.transition = Transition::kLease;
  lease.owner = "worker-a";
  lease.lease_ms = kLeaseMs;
  lease.now_ms = kNow + 1;
  const nlohmann::json notes = {
      "caf\xc3\xa9", "\xe2\x80\x8b\\u", 1.5, -7, 1e300, nlohmann::json::array({1, "two", nullptr})};
  for (size_t i = 0; i < notes.size(); ++i) {
    const nlohmann::json& note = notes[i];
    CommandSpec spec = SpecFor(run, "odd-" + std::to_string(i));
    spec.call.arguments["note"] = note;
    auto initial = NewCommand(spec, kNow);
    REQUIRE(initial.has_value());
    auto reserved = store->ReserveAndLease(*initial, lease);
    REQUIRE(reserved.has_value());
    INFO(kind << " "
              << reserved->command.call.arguments.dump(-1, ' ', false,
                                                       nlohmann::json::error_handler_t::replace));
    CHECK(*store->Get(run, reserved->command.command_key) == reserved->command);
    auto settled = store->Apply(ValidRequest(reserved->command, Transition::kSucceed));
    REQUIRE(settled.has_value());
    CHECK(settled->call.arguments == reserved->command.call.arguments);
  }
}

TEST_CASE("unlease gives back a lease whose call never started, and fences it", "[commands]") {
  auto kind = TL_COMMAND_STORES;
  auto store = MakeCommandStore(kind);
  RunId run = FreshRun("unlease");
  Command leased = DriveTo(*store, run, S::kLeased);
  REQUIRE(leased.attempts == 1);
  auto back = store->Apply(ValidRequest(leased, Transition::kUnlease));
  REQUIRE(back.has_value());
  CHECK(back->state == S::kPending);
  CHECK(back->attempts == 0);       // that lease never ran
  CHECK(back->fencing_token == 1);  // but its token is spent:
  CHECK(back->lease_owner.empty());
  for (Transition t : {Transition::kSucceed, Transition::kUnlease}) {
    auto late = store->Apply(ValidRequest(leased, t));  // a pending command has no lease
    REQUIRE_FALSE(late.has_value());
    CHECK(late.error().code() == StatusCode::kFailedPrecondition);
  }
  auto next = store->Apply(ValidRequest(*back, Transition::kLease));
  REQUIRE(next.has_value());
  CHECK(next->attempts == 1);
  CHECK(next->fencing_token == 2);
  TransitionRequest stale = ValidRequest(leased, Transition::kUnlease);  // token 1
  auto fenced = store->Apply(stale);
  REQUIRE_FALSE(fenced.has_value());
  CHECK(fenced.error().code() == StatusCode::kConflict);
  CHECK(*store->Get(run, leased.command_key) == *next);
}

TEST_CASE("transition guards refuse without writing", "[commands]") {
  auto kind = TL_COMMAND_STORES;
  auto store = MakeCommandStore(kind);
  RunId run = FreshRun("guards");
  Command leased = DriveTo(*store, run, S::kLeased, "g1");

  auto expect_refused = [&](const TransitionRequest& r, StatusCode code) {
    Command before = *store->Get(r.run, r.command_key);
    auto result = store->Apply(r);
    INFO(TransitionName(r.transition) << " " << result.status().ToString());
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code() == code);
    CHECK(*store->Get(r.run, r.command_key) == before);
  };
  TransitionRequest no_evidence = ValidRequest(leased, Transition::kSucceed);
  no_evidence.evidence = nlohmann::json::object();
  expect_refused(no_evidence, StatusCode::kInvalidArgument);
  TransitionRequest no_id = ValidRequest(leased, Transition::kSucceed);
  no_id.external_id.clear();
  expect_refused(no_id, StatusCode::kInvalidArgument);
  TransitionRequest no_error = ValidRequest(leased, Transition::kFail);
  no_error.error.clear();
  expect_refused(no_error, StatusCode::kInvalidArgument);
  TransitionRequest late_renew = ValidRequest(leased, Transition::kRenew);
  late_renew.now_ms = leased.lease_expires_ms;
  expect_refused(late_renew, StatusCode::kFailedPrecondition);
  TransitionRequest foreign_renew = ValidRequest(leased, Transition::kRenew);
  foreign_renew.owner = "someone-else";
  expect_refused(foreign_renew, StatusCode::kConflict);

  Command uncertain = DriveTo(*store, run, S::kUncertain, "g2");
  TransitionRequest spent = ValidRequest(uncertain, Transition::kRelease);
  spent.max_attempts = 1;  // one lease taken already
  expect_refused(spent, StatusCode::kLimitExceeded);
  TransitionRequest no_reason = ValidRequest(uncertain, Transition::kEscalate);
  no_reason.reason.clear();
  expect_refused(no_reason, StatusCode::kInvalidArgument);

  Command blocked = DriveTo(*store, run, S::kBlocked, "g3");
  TransitionRequest anonymous = ValidRequest(blocked, Transition::kApprove);
  anonymous.actor.clear();
  expect_refused(anonymous, StatusCode::kInvalidArgument);

  TransitionRequest unknown = ValidRequest(blocked, Transition::kApprove);
  unknown.command_key = "nope";
  auto missing = store->Apply(unknown);
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code() == StatusCode::kNotFound);
}

TEST_CASE("renew extends a live lease; fencing tokens only grow", "[commands]") {
  auto kind = TL_COMMAND_STORES;
  auto store = MakeCommandStore(kind);
  RunId run = FreshRun("renew");
  Command c = DriveTo(*store, run, S::kLeased);
  TransitionRequest renew = ValidRequest(c, Transition::kRenew);
  renew.now_ms = c.lease_expires_ms - 1;
  auto renewed = store->Apply(renew);
  REQUIRE(renewed.has_value());
  CHECK(renewed->lease_expires_ms == renew.now_ms + kLeaseMs);
  CHECK(renewed->fencing_token == c.fencing_token);

  uint64_t last = renewed->fencing_token;
  Command cur = *renewed;
  for (int i = 0; i < 3; ++i) {
    REQUIRE(store->Apply(ValidRequest(cur, Transition::kMarkUncertain)).has_value());
    auto pending =
        store->Apply(ValidRequest(*store->Get(run, c.command_key), Transition::kRelease));
    REQUIRE(pending.has_value());
    auto again = store->Apply(ValidRequest(*pending, Transition::kLease));
    REQUIRE(again.has_value());
    CHECK(again->fencing_token > last);
    last = again->fencing_token;
    cur = *again;
  }
  CHECK(cur.attempts == 4);
}

TEST_CASE("run status moves by compare-and-set; journal positions are write-once", "[commands]") {
  auto kind = TL_COMMAND_STORES;
  auto store = MakeCommandStore(kind);
  RunId run = FreshRun("runmeta");
  auto fresh = store->GetRun(run);
  REQUIRE(fresh.has_value());
  CHECK(fresh->status == RunStatus::kRunning);
  auto comp = store->SetRunStatus(run, {RunStatus::kRunning}, RunStatus::kCompensating, "x", kNow);
  REQUIRE(comp.has_value());
  CHECK(comp->status == RunStatus::kCompensating);
  auto wrong = store->SetRunStatus(run, {RunStatus::kRunning}, RunStatus::kFailed, "y", kNow);
  REQUIRE_FALSE(wrong.has_value());
  CHECK(wrong.error().code() == StatusCode::kFailedPrecondition);
  CHECK(store->GetRun(run)->status == RunStatus::kCompensating);

  JournalEntry e{1, "llm", "h1", {{"prompt", "hi"}}, {{"text", "hello"}}};
  auto put = store->PutJournalEntry(run, e);
  REQUIRE(put.has_value());
  CHECK(*put == e);
  JournalEntry other{1, "llm", "h2", {{"prompt", "bye"}}, {{"text", "x"}}};
  auto kept = store->PutJournalEntry(run, other);
  REQUIRE(kept.has_value());
  CHECK(*kept == e);
  auto read = store->GetJournalEntry(run, 1);
  REQUIRE(read.has_value());
  REQUIRE(read->has_value());
  CHECK(**read == e);
  CHECK_FALSE(store->GetJournalEntry(run, 2)->has_value());

  REQUIRE(store->Reserve(*NewCommand(SpecFor(run, "d"), kNow)).has_value());
  REQUIRE(store->DropRun(run).ok());
  CHECK(store->ListCommands(run)->empty());
  CHECK_FALSE(store->GetJournalEntry(run, 1)->has_value());
  CHECK(store->GetRun(run)->status == RunStatus::kRunning);
}

// The Redis store indexes a run once per process; a drop (by this store or by
// another process) must not leave the run's next commands out of ListRuns.
TEST_CASE("a run dropped and written again is listed again, whoever dropped it", "[commands]") {
  auto kind = TL_COMMAND_STORES;
  auto store = MakeCommandStore(kind);
  auto other_process = kind == "memory" ? nullptr : MakeCommandStore(kind);
  CommandStore& dropper = other_process ? *other_process : *store;
  RunId run = FreshRun("relisted");
  auto listed = [&] {
    auto runs = store->ListRuns(run.tenant);
    REQUIRE(runs.has_value());
    return std::find(runs->begin(), runs->end(), run.run) != runs->end();
  };
  for (int round = 0; round < 2; ++round) {
    CommandStore& by = round == 0 ? *store : dropper;
    REQUIRE(store->Reserve(*NewCommand(SpecFor(run, "a"), kNow)).has_value());
    REQUIRE(store->Reserve(*NewCommand(SpecFor(run, "b"), kNow)).has_value());
    CHECK(listed());
    REQUIRE(by.DropRun(run).ok());
    CHECK_FALSE(listed());
    auto again = store->Reserve(*NewCommand(SpecFor(run, "c"), kNow));
    REQUIRE(again.has_value());
    CHECK(again->command.seq == 1);
    CHECK(listed());
    REQUIRE(store->DropRun(run).ok());
  }
}

TEST_CASE("reservations racing on several threads create each command once, seqs unique",
          "[commands][threads]") {
  auto kind = TL_COMMAND_STORES;
  auto store = MakeCommandStore(kind);
  // Two runs of one name under two tenants, every thread alternating between
  // them, so the stores' per-run caches change runs under the race too.
  const RunId first = FreshRun("race");
  const RunId second{first.tenant + "-other", first.run};
  constexpr int kThreads = 4;
  constexpr int kCommands = 12;
  // Every thread reserves the same commands, each starting at its own offset,
  // so most reservations collide with another thread's.
  std::atomic<int> created{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCommands; ++i) {
        std::string step = "step-" + std::to_string((i + t * 3) % kCommands);
        for (const RunId* run : {&first, &second}) {
          if ((i + t) % 2 == 1) run = run == &first ? &second : &first;
          auto reserved = store->Reserve(*NewCommand(SpecFor(*run, step), kNow));
          if (!reserved) {
            ++errors;
          } else if (reserved->created) {
            ++created;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(errors == 0);
  CHECK(created == 2 * kCommands);
  for (const RunId& run : {first, second}) {
    auto all = store->ListCommands(run);
    REQUIRE(all.has_value());
    REQUIRE(all->size() == kCommands);
    std::set<uint64_t> seqs;
    for (const Command& c : *all) {
      seqs.insert(c.seq);
      CHECK(c.run == run);  // each run lists its own commands only
    }
    CHECK(seqs.size() == kCommands);
    CHECK(*seqs.begin() == 1);
    CHECK(*seqs.rbegin() == kCommands);
  }
}
