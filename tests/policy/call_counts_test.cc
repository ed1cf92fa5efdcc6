// ledger.calls answered from counts kept across checks (policy/src/internal/
// call_counts.h): as a conversation's call history grows, on a branch of it,
// on an older version and on another conversation's history, every count is
// the one a walk of the whole history gives. Checked through a real checker
// and, for the incremental path itself, through CallCounts (internal header).
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "internal/call_counts.h"
#include "policy_test_util.h"

namespace taskledger {
namespace {

using testing::CallOf;
using testing::kNow;
using testing::MakeChecker;
using testing::MakePack;

CallRecord Call(const std::string& tool, const std::string& order, const std::string& outcome) {
  CallRecord c;
  c.turn = 1;
  c.call.id = "c";
  c.call.tool = tool;
  c.call.arguments = {{"order_id", order}};
  c.writes = true;
  c.outcome = outcome;
  return c;
}

// The rule denies with the three counts it reads, so the reason shows them.
constexpr const char* kCountingRule = R"(
rule { id = "count", tools = {"write_probe"}, check = function(call, ledger)
  return deny(ledger.calls("write_refund") .. " " .. ledger.calls("write_*") .. " " ..
              ledger.calls("write_refund", "order_id", call.args.order_id))
end }
)";

std::string Counts(PolicyChecker& checker, const CallList& calls, const std::string& conv,
                   uint64_t generation) {
  LedgerState s;
  s.calls = calls;
  s.version = generation;
  PolicyDecision d = checker.Check(CallOf("write_probe", {{"order_id", "#W1"}}), s,
                                   ViewKey{conv, generation}, kNow);
  return d.reason;
}

TEST_CASE("ledger.calls counts follow a growing history, its branches and other histories",
          "[policy]") {
  auto checker = MakeChecker(MakePack(kCountingRule));
  CallList history;
  CHECK(Counts(*checker, history, "a", 1) == "0 0 0");
  history.push_back(Call("write_refund", "#W1", "ok"));
  CHECK(Counts(*checker, history, "a", 2) == "1 1 1");
  const CallList at_two = history;
  history.push_back(Call("write_refund", "#W2", "ok"));
  history.push_back(Call("write_exchange", "#W1", "ok"));
  history.push_back(Call("write_refund", "#W1", "denied"));
  CHECK(Counts(*checker, history, "a", 3) == "2 3 1");
  // Several records added at once, one of them a match.
  history.push_back(Call("get_order", "#W1", "ok"));
  history.push_back(Call("write_refund", "#W1", "ok"));
  CHECK(Counts(*checker, history, "a", 4) == "3 4 2");
  // The same history again (a repeated check) and an older version of it.
  CHECK(Counts(*checker, history, "a", 4) == "3 4 2");
  CHECK(Counts(*checker, at_two, "a", 2) == "1 1 1");
  // A branch from the older version: as long as the newer history, other records.
  CallList branch = at_two;
  for (int i = 0; i < 5; ++i) branch.push_back(Call("write_exchange", "#W9", "ok"));
  CHECK(Counts(*checker, branch, "a-branch", 4) == "1 6 1");
  // Another conversation's history, then the first one's again.
  CallList other;
  other.push_back(Call("write_refund", "#W1", "ok"));
  other.push_back(Call("write_refund", "#W1", "ok"));
  CHECK(Counts(*checker, other, "b", 1) == "2 2 2");
  CHECK(Counts(*checker, history, "a", 4) == "3 4 2");
  CHECK(Counts(*checker, CallList{}, "c", 1) == "0 0 0");
}

TEST_CASE("kept call counts are brought forward, not counted again", "[policy]") {
  policy_internal::CallCounts counts;
  CallList history;
  history.push_back(Call("write_refund", "#W1", "ok"));
  CHECK(counts.Count(history, "write_refund", true, "order_id", "#W1") == 1);
  CHECK(counts.Count(history, "write_*", false, "", "") == 1);
  for (int turn = 0; turn < 50; ++turn) {
    history.push_back(Call("write_refund", turn % 2 == 0 ? "#W1" : "#W2", "ok"));
    history.push_back(Call("get_order", "#W1", "ok"));
    CHECK(counts.Count(history, "write_refund", true, "order_id", "#W1") == 2 + turn / 2);
    CHECK(counts.Count(history, "write_*", false, "", "") == 2 + turn);
  }
  CHECK(counts.resets() == 0);
  // A history that is not the kept one grown: the counts start again from it.
  CallList other;
  other.push_back(Call("write_refund", "#W1", "error"));
  CHECK(counts.Count(other, "write_refund", true, "order_id", "#W1") == 0);
  CHECK(counts.resets() == 1);
}

TEST_CASE("at most kMaxQueries call counts are kept; the others are still right", "[policy]") {
  policy_internal::CallCounts counts;
  CallList history;
  history.push_back(Call("write_refund", "#W1", "ok"));
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < policy_internal::CallCounts::kMaxQueries + 10; ++i) {
      CHECK(counts.Count(history, "write_refund", true, "order_id", "#W" + std::to_string(i)) ==
            (i == 1 ? 1 + round : 0));
    }
    history.push_back(Call("write_refund", "#W1", "ok"));
  }
  const std::string long_value(policy_internal::CallCounts::kMaxQueryBytes, 'x');
  history.push_back(Call("write_refund", long_value, "ok"));
  CHECK(counts.Count(history, "write_refund", true, "order_id", long_value) == 1);
  history.push_back(Call("write_refund", long_value, "ok"));
  CHECK(counts.Count(history, "write_refund", true, "order_id", long_value) == 2);
}

}  // namespace
}  // namespace taskledger
