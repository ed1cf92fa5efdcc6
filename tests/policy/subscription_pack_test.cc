// The subscription pack (rules/subscription): every "state" case in its
// tests/*.json must produce the expected decision; the test loader itself is
// checked on malformed input.
#include <filesystem>

#include <catch2/catch.hpp>

#include "policy_test_util.h"
#include "taskledger/policy/test_state.h"

using namespace taskledger;
using namespace taskledger::testing;

TEST_CASE("the subscription pack passes its own policy tests", "[policy][rules]") {
  auto pack = RulePack::Load(std::filesystem::path(TASKLEDGER_SOURCE_DIR) / "rules/subscription");
  INFO((pack ? std::string() : pack.error().ToString()));
  REQUIRE(pack);
  CHECK(pack.value()->name() == "subscription");
  CHECK(pack.value()->Classify("get_subscription") == ToolClass::kReadOnly);
  CHECK(pack.value()->Classify("verify_identity") == ToolClass::kReadOnly);
  CHECK(pack.value()->Classify("cancel_subscription") == ToolClass::kWrites);
  CHECK(pack.value()->Classify("downgrade_subscription") == ToolClass::kWrites);
  auto checker = MakeChecker(pack.value());
  int cases = 0;
  for (const auto& [path, doc] : pack.value()->tests()) {
    REQUIRE(doc.contains("cases"));
    for (const auto& c : doc["cases"]) {
      if (!c.contains("state")) continue;  // event cases need the extraction pipeline
      ++cases;
      std::string name = c.value("name", "?");
      INFO(path << ": " << name);
      auto state = LoadTestState(c["state"], kNow);
      REQUIRE(state);
      ProposedCall call{"t", c["call"]["tool"].get<std::string>(),
                        c["call"].value("arguments", nlohmann::json::object())};
      PolicyDecision d = checker->Check(call, state.value(), {}, kNow);
      Status match = MatchExpectation(d, c["expect"]);
      INFO(match.message());
      CHECK(match.ok());
    }
  }
  CHECK(cases >= 8);
}

TEST_CASE("the test-state loader reports malformed members", "[policy]") {
  CHECK(LoadTestState({{"factz", {}}}, kNow).error().message().find("factz") != std::string::npos);
  CHECK_FALSE(LoadTestState({{"facts", {{"k", {{"$entry", {{"verified", false}}}}}}}}, kNow));
  CHECK_FALSE(LoadTestState({{"calls", {{{"arguments", {}}}}}}, kNow));
  auto ok = LoadTestState(
      {{"version", 2}, {"facts", {{"k", {{"$entry", {{"value", 1}, {"source", "agent"}}}}}}}},
      kNow);
  REQUIRE(ok);
  CHECK(ok.value().version == 2);
  CHECK(ok.value().of(Category::kFact).at("k").provenance.source == SourceKind::kAgent);
  PolicyDecision d;
  d.outcome = Outcome::kDeny;
  d.rule_id = "r";
  d.reason = "offer a downgrade";
  CHECK(MatchExpectation(d, {{"decision", "deny"}, {"rule", "r"}, {"reason_contains", "downgrade"}})
            .ok());
  CHECK(MatchExpectation(d, {{"decision", "allow"}}).code() == StatusCode::kFailedPrecondition);
  CHECK(MatchExpectation(d, {{"decision", "nope"}}).code() == StatusCode::kInvalidArgument);
}
