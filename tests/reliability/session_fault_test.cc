// Sessions over RedisStore under infrastructure faults (ctest label `fault`):
// redis-server killed with -9 and restarted (appendfsync always) in the middle
// of a multi-threaded workload, replies lost after the server applied a
// commit, Redis unreachable and Redis stalled. What must hold: no turn that
// EndTurn acknowledged is lost, no turn is applied twice, every session
// recovers by itself, and no call waits on a slow Redis past its timeout.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "reliability/fault_proxy.h"
#include "reliability/workload.h"
#include "support/redis_server.h"

using namespace taskledger;
using namespace taskledger::testing;
using namespace std::chrono_literals;
using Clock_ = std::chrono::steady_clock;

namespace {

struct WorkerReport {
  uint64_t acknowledged = 0;       // turns EndTurn confirmed
  std::vector<uint64_t> versions;  // the version each acknowledged turn got
  int retries = 0;                 // store calls retried while Redis was down
  std::string error;               // first unexpected failure
};

// One agent: opens its conversation and runs `turns` workload turns, retrying
// whatever fails while Redis is down; gives up only at `deadline`.
void RunWorker(Store& store, const ConversationId& id, uint64_t turns, Clock_::time_point deadline,
               WorkerReport& report) {
  std::unique_ptr<Session> session;
  while (!session) {
    auto opened = Session::Open(store, id, RetailPack());
    if (opened.has_value()) {
      session = std::move(opened.value());
    } else if (!StoreDown(opened.error()) || Clock_::now() > deadline) {
      report.error = "Open: " + opened.error().ToString();
      return;
    } else {
      ++report.retries;
      std::this_thread::sleep_for(20ms);
    }
  }
  for (uint64_t k = session->ledger().version() + 1; k <= turns; ++k) {
    if (Status s = StageWorkloadTurn(*session, k); !s.ok()) {
      report.error = "turn " + std::to_string(k) + ": " + s.ToString();
      return;
    }
    while (true) {
      auto v = session->EndTurn();
      if (v.has_value()) {
        report.versions.push_back(v.value());
        ++report.acknowledged;
        break;
      }
      if (!StoreDown(v.error()) || Clock_::now() > deadline) {
        report.error = "EndTurn of turn " + std::to_string(k) + ": " + v.error().ToString();
        return;
      }
      ++report.retries;
      std::this_thread::sleep_for(20ms);
    }
  }
}

}  // namespace

TEST_CASE("fault: kill -9 of redis-server during a session workload loses no acknowledged turn",
          "[reliability][fault]") {
  auto server = RedisServer::Start();
  auto store = MustOpenStore(server->url(), 500ms);
  constexpr int kWorkers = 4;
  constexpr uint64_t kTurns = 1500;  // long enough that three kills land mid-workload
  const auto deadline = Clock_::now() + 90s;
  std::vector<WorkerReport> reports(kWorkers);
  // Redis dies three times mid-workload; the restart replays the AOF.
  const int kills = RunWhileKilling(*server, kWorkers, 3, [&](int w) {
    RunWorker(*store, ConversationId{"fault", "w" + std::to_string(w)}, kTurns, deadline,
              reports[w]);
  });

  auto fresh = MustOpenStore(server->url());
  int retries = 0;
  for (int w = 0; w < kWorkers; ++w) {
    INFO("worker " << w);
    const WorkerReport& r = reports[w];
    CHECK(r.error.empty());
    CHECK(r.acknowledged == kTurns);
    for (size_t i = 0; i < r.versions.size(); ++i) CHECK(r.versions[i] == i + 1);
    CHECK(VerifyWorkload(*fresh, {"fault", "w" + std::to_string(w)}, kTurns).empty());
    retries += r.retries;
  }
  // The kills really landed in the middle of the workload.
  CHECK(kills == 3);
  CHECK(retries > 0);
}

TEST_CASE("fault: a commit that landed but whose reply was lost is not applied twice",
          "[reliability][fault]") {
  auto server = RedisServer::Start();
  auto proxy = FaultProxy::Start(server->port());
  auto store = MustOpenStore(proxy->url(), 500ms);  // snapshot every 4 turns
  const ConversationId id{"fault", "lost-reply"};
  auto session = Session::Open(*store, id, RetailPack());
  REQUIRE(session.has_value());
  // Turns 1 (creates the stream) and 4 (carries a snapshot) and the plain
  // turns between them: every shape of the XADD a commit sends.
  for (uint64_t k = 1; k <= 5; ++k) {
    INFO("turn " << k);
    REQUIRE(StageWorkloadTurn(*session.value(), k).ok());
    proxy->SetMode(FaultProxy::Mode::kDropReplies);
    const int dropped = proxy->dropped_replies();
    auto first = session.value()->EndTurn();
    REQUIRE_FALSE(first.has_value());
    CHECK(StoreDown(first.error()));
    CHECK(proxy->dropped_replies() > dropped);
    // The server applied the turn; the session cannot know. A retry a
    // moment later must recognise it instead of committing it again.
    std::this_thread::sleep_for(5ms);
    proxy->SetMode(FaultProxy::Mode::kPass);
    auto retried = session.value()->EndTurn();
    REQUIRE(retried.has_value());
    CHECK(retried.value() == k);
    CHECK(VerifyWorkload(*MustOpenStore(server->url()), id, k).empty());
  }
}

TEST_CASE("fault: Redis unreachable fails fast and clearly, and the staged turn survives",
          "[reliability][fault]") {
  auto server = RedisServer::Start();
  auto proxy = FaultProxy::Start(server->port());
  auto store = MustOpenStore(proxy->url(), 300ms);
  const ConversationId id{"fault", "down"};
  auto session = Session::Open(*store, id, RetailPack());
  REQUIRE(session.has_value());
  REQUIRE(StageWorkloadTurn(*session.value(), 1).ok());

  server->Kill9();
  auto start = Clock_::now();
  auto reopened = Session::Open(*store, {"fault", "other"}, RetailPack());
  auto open_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock_::now() - start).count();
  REQUIRE_FALSE(reopened.has_value());
  CHECK(reopened.error().code() == StatusCode::kUnavailable);
  CHECK_FALSE(reopened.error().message().empty());
  CHECK(open_ms < 1500);

  for (int attempt = 0; attempt < 3; ++attempt) {
    start = Clock_::now();
    auto v = session.value()->EndTurn();
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock_::now() - start).count();
    REQUIRE_FALSE(v.has_value());
    CHECK(v.error().code() == StatusCode::kUnavailable);
    CHECK(ms < 1500);
  }
  // The turn stayed staged through the failures and lands once Redis is back.
  CHECK(session.value()->pending().calls.size() == 1);
  server->Restart();
  auto v = session.value()->EndTurn();
  REQUIRE(v.has_value());
  CHECK(v.value() == 1);
  CHECK(VerifyWorkload(*MustOpenStore(server->url()), id, 1).empty());
}

TEST_CASE("fault: a stalled Redis never holds a call past its configured timeout",
          "[reliability][fault]") {
  auto server = RedisServer::Start();
  auto proxy = FaultProxy::Start(server->port());
  constexpr auto kTimeout = 250ms;
  auto store = MustOpenStore(proxy->url(), kTimeout);
  const ConversationId id{"fault", "stall"};
  auto session = Session::Open(*store, id, RetailPack());
  REQUIRE(session.has_value());
  REQUIRE(StageWorkloadTurn(*session.value(), 1).ok());

  proxy->SetMode(FaultProxy::Mode::kStall);
  // The policy gate works on the in-memory ledger: a stalled store does not
  // slow a check down at all.
  auto start = Clock_::now();
  CallResult check = session.value()->Check(ProposedCall{
      "c9", "cancel_pending_order", {{"order_id", "#W1"}, {"reason", "no longer needed"}}});
  CHECK(Clock_::now() - start < kTimeout);
  CHECK_FALSE(check.decision.allowed());  // no confirmation yet: denied or confirm, never run

  // Store calls give up within the timeout (plus scheduling slack).
  start = Clock_::now();
  auto v = session.value()->EndTurn();
  auto elapsed = Clock_::now() - start;
  REQUIRE_FALSE(v.has_value());
  CHECK(v.error().code() == StatusCode::kTimeout);
  CHECK(elapsed < kTimeout * 3);
  start = Clock_::now();
  auto opened = Session::Open(*store, {"fault", "stall-2"}, RetailPack());
  elapsed = Clock_::now() - start;
  REQUIRE_FALSE(opened.has_value());
  CHECK(StoreDown(opened.error()));
  CHECK(elapsed < kTimeout * 3);

  // The stalled request never reached the server, so the retry commits turn 1.
  proxy->SetMode(FaultProxy::Mode::kPass);
  auto retried = session.value()->EndTurn();
  REQUIRE(retried.has_value());
  CHECK(retried.value() == 1);
  CHECK(VerifyWorkload(*MustOpenStore(server->url()), id, 1).empty());
}
