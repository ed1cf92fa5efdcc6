// The session's journal (SessionCommandOptions::journal), on the memory and
// the Redis command store. What a user notices: a loop that crashed and is
// run again from its start on a new session does not ask the model again for
// the steps it already took, sees the same clock readings and random ids, and
// does not repeat its writes; a resumed loop that asks something else at a
// step than it asked before is stopped with an error naming that step.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>

#include "session/command_session_support.h"
#include "taskledger/base/clock.h"
#include "taskledger/session/session.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// A scripted model that counts how often it is asked.
struct Model {
  int asked = 0;
  nlohmann::json Answer(const nlohmann::json& request) {
    ++asked;
    if (request.contains("result"))
      return {
          {"text", "shipped, reference " + request["ref"].dump() + " at " + request["at"].dump()}};
    return {{"tool", "ship"}, {"order_id", request["user"]}};
  }
};

struct Loop {
  ManualClock clock{1'000};
  uint64_t next_random = 7;
  Fixture& f;
  explicit Loop(Fixture& fixture) : f(fixture) {}
  std::unique_ptr<Session> Open() {
    SessionOptions options;
    options.clock = &clock;
    options.commands.store = f.commands.get();
    options.commands.journal = true;
    auto s = Session::Open(*f.ledger_store, f.conv, RefundPack(), options);
    REQUIRE(s.has_value());
    return std::move(s).value();
  }
  // One turn of the agent loop; stops after the write when `crash` is set.
  // Returns the model's final text (empty after a crash).
  std::string Run(Session& s, Model& model, Backend& backend, const std::string& user, bool crash) {
    nlohmann::json ask = {{"user", user}};
    auto first =
        s.Journaled("model", ask, [&]() -> Result<nlohmann::json> { return model.Answer(ask); });
    REQUIRE(first.has_value());
    ProposedCall call{"c1", (*first)["tool"], {{"order_id", (*first)["order_id"]}}};
    CallResult r = s.HandleToolCall(call, backend.executor());
    REQUIRE(r.command.has_value());
    CHECK(r.command->state == CommandState::kSucceeded);
    auto ref = s.JournaledRandom([&] { return next_random++; });
    REQUIRE(ref.has_value());
    auto at = s.JournaledNowMs();
    REQUIRE(at.has_value());
    if (crash) return {};
    nlohmann::json tell = {{"user", user}, {"result", r.message}, {"ref", *ref}, {"at", *at}};
    auto last =
        s.Journaled("model", tell, [&]() -> Result<nlohmann::json> { return model.Answer(tell); });
    REQUIRE(last.has_value());
    return (*last)["text"];
  }
};

}  // namespace

TEST_CASE("journal: a loop resumed after a crash replays the model and the clock, not the write") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  Loop loop(f);
  Model model;
  Backend backend;
  {
    auto crashed = loop.Open();
    loop.Run(*crashed, model, backend, "#A1", /*crash=*/true);
    REQUIRE(model.asked == 1);
    REQUIRE(backend.keys.size() == 1);
  }  // the process dies here: nothing after the clock reading was recorded

  loop.clock.Set(9'000);  // the restart happens later, and the RNG has moved on
  loop.next_random = 1'000;
  auto resumed = loop.Open();
  std::string text = loop.Run(*resumed, model, backend, "#A1", /*crash=*/false);
  CHECK(model.asked == 2);                        // only the step the crashed loop never reached
  CHECK(backend.keys.size() == 1);                // the write was not made again
  CHECK(text == "shipped, reference 7 at 1000");  // recorded id and time, not new ones
  REQUIRE(resumed->journal() != nullptr);
  CHECK(resumed->journal()->replayed_steps() == 3);  // model, random id, clock
  CHECK(resumed->journal()->next_position() == 5);

  // Run once more: everything is answered from the record.
  auto again = loop.Open();
  Model unused;
  CHECK(loop.Run(*again, unused, backend, "#A1", false) == "shipped, reference 7 at 1000");
  CHECK(unused.asked == 0);
  CHECK(again->journal()->replayed_steps() == 4);
}

TEST_CASE("journal: a loop that crashed after its last step replays all of it, write included") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  Loop loop(f);
  Model model;
  Backend backend;
  std::string said;
  {
    auto first = loop.Open();
    said = loop.Run(*first, model, backend, "#A1", /*crash=*/false);
  }  // died before EndTurn
  auto resumed = loop.Open();
  // The write's result reaches the model's next request as the first run saw
  // it (not "already done"), so the recorded answer still matches.
  CHECK(loop.Run(*resumed, model, backend, "#A1", false) == said);
  CHECK(model.asked == 2);
  CHECK(backend.keys.size() == 1);
  CHECK(resumed->journal()->replayed_steps() == 4);
  CHECK(Calls(*resumed).back().outcome == "deduplicated");
}

TEST_CASE("journal: a resumed loop that asks something else at a step is stopped, naming it") {
  Fixture f(GENERATE(as<std::string>{}, "memory", "redis"));
  Loop loop(f);
  Model model;
  Backend backend;
  {
    auto first = loop.Open();
    loop.Run(*first, model, backend, "#A1", /*crash=*/true);
  }
  auto resumed = loop.Open();
  nlohmann::json changed = {{"user", "#B2"}};
  auto step = resumed->Journaled("model", changed,
                                 [&]() -> Result<nlohmann::json> { return model.Answer(changed); });
  REQUIRE_FALSE(step.has_value());
  CHECK(step.error().code() == StatusCode::kDivergence);
  CHECK_THAT(step.error().message(),
             Catch::Contains("position 1") && Catch::Contains("#A1") && Catch::Contains("#B2"));
  CHECK(model.asked == 1);  // not asked about the changed input
  // Every later step fails the same way: the loop no longer follows its record.
  auto clock = resumed->JournaledNowMs();
  REQUIRE_FALSE(clock.has_value());
  CHECK(clock.error().code() == StatusCode::kDivergence);
}

TEST_CASE("journal: a session without one says so, and one without a command store is refused") {
  auto store = NewMemoryStore();
  auto plain = Session::Open(*store, {"t", "no-journal"}, RefundPack());
  REQUIRE(plain.has_value());
  CHECK((*plain)->journal() == nullptr);
  auto step = (*plain)->Journaled("model", {{"user", "hi"}},
                                  []() -> Result<nlohmann::json> { return nlohmann::json(1); });
  REQUIRE_FALSE(step.has_value());
  CHECK(step.error().code() == StatusCode::kFailedPrecondition);
  CHECK_FALSE((*plain)->JournaledNowMs().has_value());

  SessionOptions options;
  options.commands.journal = true;
  auto refused = Session::Open(*store, {"t", "no-store"}, RefundPack(), options);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(refused.error().message(), Catch::Contains("command store"));
}
