// The retail pack's decision records list only the ledger entries its rules
// really judge on: a call without a payment_method_id reads no payment method
// (no key named "user.<u>.payment.nil.source"), a call with one reads that
// method's source. Checked on rules/retail itself, reads resolved as the
// Session resolves them.
#include <filesystem>
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "policy_test_util.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/decision.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

std::unique_ptr<PolicyChecker> RetailChecker() {
  auto pack = RulePack::Load(std::filesystem::path(TASKLEDGER_SOURCE_DIR) / "rules" / "retail");
  INFO((pack ? std::string() : pack.error().ToString()));
  REQUIRE(pack.has_value());
  return MakeChecker(pack.value());
}

// An authenticated user with a pending order paid by credit card and a gift card.
LedgerState PendingOrder() {
  return StateOf({{"version", 3},
                  {"identifiers", {{"user.authenticated.ann_1", "ann_1"}}},
                  {"facts",
                   {{"order.#W1.status", "pending"},
                    {"order.#W1.user_id", "ann_1"},
                    {"order.#W1.original_payment_method", "credit_card_1"},
                    {"order.#W1.total", 50.0},
                    {"user.ann_1.payment.credit_card_1.source", "credit_card"},
                    {"user.ann_1.payment.gift_card_2.source", "gift_card"},
                    {"user.ann_1.payment.gift_card_2.balance", 100.0}}},
                  {"conditions", {{"confirmation", nlohmann::json::object()}}}});  // a yes
}

// Every key any rule of the decision read, resolved as the Session does.
std::set<std::string> ReadKeys(PolicyChecker& checker, const ProposedCall& call,
                               const LedgerState& state, const ViewKey& view,
                               PolicyDecision& decision) {
  decision = checker.Check(call, state, view, kNow);
  REQUIRE(checker.ResolveReads(decision, state).ok());
  std::set<std::string> keys;
  for (const RuleEvaluation& rule : decision.rules) {
    for (const EntryRead& read : rule.reads) keys.insert(read.key);
  }
  return keys;
}

}  // namespace

TEST_CASE("retail reads: a call without a payment method reads no payment method",
          "[policy][retail]") {
  auto checker = RetailChecker();
  const LedgerState state = PendingOrder();
  PolicyDecision d;
  const std::set<std::string> keys = ReadKeys(
      *checker,
      CallOf("cancel_pending_order", {{"order_id", "#W1"}, {"reason", "no longer needed"}}), state,
      {"conv", 1}, d);
  INFO(d.rule_id << ": " << d.reason);
  CHECK(d.allowed());
  CHECK(keys.count("order.#W1.status") == 1);  // the rules did read the order
  for (const std::string& key : keys) {
    INFO(key);
    CHECK(key.find(".payment.") == std::string::npos);
  }
}

TEST_CASE("retail reads: a call with a payment method reads its source", "[policy][retail]") {
  auto checker = RetailChecker();
  const LedgerState state = PendingOrder();
  PolicyDecision d;
  const std::set<std::string> keys =
      ReadKeys(*checker,
               CallOf("modify_pending_order_payment",
                      {{"order_id", "#W1"}, {"payment_method_id", "gift_card_2"}}),
               state, {"conv", 2}, d);
  INFO(d.rule_id << ": " << d.reason);
  CHECK(d.allowed());
  CHECK(keys.count("user.ann_1.payment.gift_card_2.source") == 1);
  CHECK(keys.count("user.ann_1.payment.gift_card_2.balance") == 1);
  CHECK(keys.count("user.ann_1.payment.nil.source") == 0);
}
