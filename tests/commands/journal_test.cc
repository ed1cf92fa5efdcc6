// Journal on both stores: first execution records LLM completions, tool
// results, clock reads and random draws; a replay returns the records without
// invoking anything and so takes the same branches; a replay that asks for
// something else stops with a Divergence error naming the position and both
// requests.
#include <catch2/catch.hpp>

#include "command_test_support.h"
#include "taskledger/commands/journal.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// A small workflow whose branch depends on every non-deterministic input.
struct Workflow {
  int model_calls = 0, tool_calls = 0, rng_calls = 0;
  uint64_t next_random = 7;

  Result<std::string> Run(Journal& j, const Clock& clock, const std::string& prompt) {
    auto now = j.NowMs(clock);
    if (!now) return now.error();
    auto draw = j.Random([&] {
      ++rng_calls;
      return next_random++;
    });
    if (!draw) return draw.error();
    auto answer =
        j.Completion({{"prompt", prompt}, {"draw", *draw}}, [&]() -> Result<nlohmann::json> {
          ++model_calls;
          return nlohmann::json{{"text", model_calls == 1 ? "refund" : "deny"}};
        });
    if (!answer) return answer.error();
    auto order = j.ToolResult("get_order", {{"id", "A1"}}, [&]() -> Result<nlohmann::json> {
      ++tool_calls;
      return nlohmann::json{{"status", "pending"}, {"at", *now}};
    });
    if (!order) return order.error();
    return (*answer)["text"].get<std::string>() + "@" + std::to_string(*draw) + "@" +
           std::to_string((*order)["at"].get<int64_t>());
  }
};

}  // namespace

TEST_CASE("a replayed run returns the recorded values and takes the same branch",
          "[commands][journal]") {
  auto store = MakeCommandStore(GENERATE(std::string("memory"), std::string("redis")));
  RunId run = FreshRun("journal");
  ManualClock clock(kNow);
  Workflow first;
  Journal j1(*store, run);
  auto a = first.Run(j1, clock, "refund A1?");
  REQUIRE(a.has_value());
  CHECK(*a == "refund@7@" + std::to_string(kNow));
  CHECK(j1.next_position() == 5);
  CHECK(j1.replayed_steps() == 0);

  // A new process replays: the model would now say "deny", the clock moved, the RNG differs.
  clock.Advance(50'000);
  Workflow second;
  second.model_calls = 1;
  second.next_random = 1000;
  Journal j2(*store, run);
  auto b = second.Run(j2, clock, "refund A1?");
  REQUIRE(b.has_value());
  CHECK(*b == *a);
  CHECK(second.model_calls == 1);  // not invoked
  CHECK(second.tool_calls == 0);
  CHECK(second.rng_calls == 0);
  CHECK(j2.replayed_steps() == 4);

  // Continuing past the record executes for real and records.
  auto extra = j2.Random([] { return uint64_t{42}; });
  REQUIRE(extra.has_value());
  CHECK(*extra == 42);
  Journal j3(*store, run);
  Workflow third;
  REQUIRE(third.Run(j3, clock, "refund A1?").has_value());
  CHECK(*j3.Random([] { return uint64_t{0}; }) == 42);
}

TEST_CASE("a replay that asks something else stops with a divergence error",
          "[commands][journal]") {
  auto store = MakeCommandStore(GENERATE(std::string("memory"), std::string("redis")));
  RunId run = FreshRun("diverge");
  ManualClock clock(kNow);
  Workflow first;
  Journal j1(*store, run);
  REQUIRE(first.Run(j1, clock, "refund A1?").has_value());

  Workflow second;
  Journal j2(*store, run);
  auto diverged = second.Run(j2, clock, "cancel A1?");  // a different prompt at position 3
  REQUIRE_FALSE(diverged.has_value());
  CHECK(diverged.error().code() == StatusCode::kDivergence);
  const std::string& m = diverged.error().message();
  CHECK(m.find("position 3") != std::string::npos);
  CHECK(m.find("refund A1?") != std::string::npos);  // expected
  CHECK(m.find("cancel A1?") != std::string::npos);  // actual
  CHECK(second.model_calls == 0);
  // The journal stays stopped.
  auto after = j2.Random([] { return uint64_t{1}; });
  REQUIRE_FALSE(after.has_value());
  CHECK(after.error().code() == StatusCode::kDivergence);

  // A different kind of step at a recorded position diverges too.
  Journal j3(*store, run);
  auto wrong_kind = j3.Random([] { return uint64_t{1}; });  // position 1 was a clock read
  REQUIRE_FALSE(wrong_kind.has_value());
  CHECK(wrong_kind.error().message().find("expected clock") != std::string::npos);
}

TEST_CASE("a failing producer records nothing and keeps its position", "[commands][journal]") {
  auto store = MakeCommandStore(GENERATE(std::string("memory"), std::string("redis")));
  RunId run = FreshRun("producer");
  Journal j(*store, run);
  auto failed = j.Completion({{"prompt", "x"}}, []() -> Result<nlohmann::json> {
    return Status::Unavailable("model endpoint down");
  });
  REQUIRE_FALSE(failed.has_value());
  CHECK(failed.error().code() == StatusCode::kUnavailable);
  CHECK(j.next_position() == 1);
  CHECK_FALSE(store->GetJournalEntry(run, 1)->has_value());
  auto ok = j.Completion({{"prompt", "x"}}, []() -> Result<nlohmann::json> {
    return nlohmann::json{{"text", "fine"}};
  });
  REQUIRE(ok.has_value());
  CHECK(j.next_position() == 2);
}
