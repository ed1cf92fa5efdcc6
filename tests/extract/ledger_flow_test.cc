// Extraction through real Ledger commits over a MemoryStore: a user's claim
// against a tool's evidence, and the subscription pack's scenario across two
// turns (the later output overwrites the stale fact, history keeps it, the
// grace period expires on the clock).
#include <filesystem>
#include <memory>

#include "extract_test_util.h"
#include "taskledger/ledger/ledger.h"
#include "taskledger/ledger/memory_store.h"

namespace taskledger {
namespace {

using extract_test::Call;
using extract_test::Rules;
using nlohmann::json;

constexpr int64_t kDayMs = 86'400'000;

struct Conversation {
  ManualClock clock;
  std::unique_ptr<Store> store = NewMemoryStore({}, clock);
  std::unique_ptr<Ledger> ledger;

  explicit Conversation(const char* name) {
    auto l = Ledger::Open(*store, {"default", name}, clock);
    REQUIRE(l.has_value());
    ledger = std::move(l).value();
  }
  void Commit(Extraction e) {
    // Staged outside REQUIRE: the macro names its argument twice.
    Status staged = StageExtraction(*ledger, std::move(e));
    REQUIRE(staged.ok());
    REQUIRE(ledger->Commit().has_value());
  }
  const Entry* Live(Category c, const std::string& key) const {
    return ledger->head().FindLive(c, key, clock.NowMs());
  }
};

json OrderRules() {
  return {{"tools",
           {{"get_order_details",
             {{{"id", "order.status"},
               {"path", "/status"},
               {"category", "fact"},
               {"key", "order.{/order_id}.status"}}}}}},
          {"user",
           {{{"id", "user.order_status"},
             {"pattern", "order (#W[0-9]{7}) is (pending|delivered|cancelled)"},
             {"icase", true},
             {"category", "fact"},
             {"key", "order.{$1}.status"},
             {"value", "{$2}"}}}}};
}

const char* kDelivered = R"({"order_id": "#W1234567", "status": "delivered"})";

TEST_CASE("a user's claim never overwrites a tool's evidence; the conflict is recorded",
          "[extract][ledger]") {
  Conversation conv("claim-after-evidence");
  Extractor ex(Rules(OrderRules()), {.clock = &conv.clock});
  conv.Commit(ex.ExtractToolOutput(Call("get_order_details", "c1"), kDelivered));
  conv.Commit(ex.ExtractUserMessage("My order #W1234567 is pending, please cancel it"));

  const Entry* status = conv.Live(Category::kFact, "order.#W1234567.status");
  REQUIRE(status != nullptr);
  CHECK(status->value == "delivered");
  CHECK(status->provenance.verified);
  CHECK(status->provenance.turn == 1);
  CHECK(status->provenance.source_id == "get_order_details#c1");

  const Entry* conflict = conv.Live(Category::kCondition, "conflict.fact.order.#W1234567.status");
  REQUIRE(conflict != nullptr);
  CHECK(conflict->value ==
        json{{"claimed", "pending"}, {"verified", "delivered"}, {"claimed_by", "user"}});
  CHECK(conflict->provenance.turn == 2);
  CHECK(conflict->provenance.rule_id == "user.order_status");
}

TEST_CASE("a tool's evidence replaces an earlier claim", "[extract][ledger]") {
  Conversation conv("evidence-after-claim");
  Extractor ex(Rules(OrderRules()), {.clock = &conv.clock});
  conv.Commit(ex.ExtractUserMessage("order #W1234567 is pending"));
  const Entry* claimed = conv.Live(Category::kFact, "order.#W1234567.status");
  REQUIRE(claimed != nullptr);
  CHECK(claimed->value == "pending");
  CHECK_FALSE(claimed->provenance.verified);
  CHECK(claimed->provenance.source == SourceKind::kUserMessage);

  conv.Commit(ex.ExtractToolOutput(Call("get_order_details", "c2"), kDelivered));
  const Entry* status = conv.Live(Category::kFact, "order.#W1234567.status");
  REQUIRE(status != nullptr);
  CHECK(status->value == "delivered");
  CHECK(status->provenance.verified);
  CHECK(conv.Live(Category::kCondition, "conflict.fact.order.#W1234567.status") == nullptr);
}

TEST_CASE("a user who agrees with the evidence causes no conflict", "[extract][ledger]") {
  Conversation conv("agreeing-claim");
  Extractor ex(Rules(OrderRules()), {.clock = &conv.clock});
  conv.Commit(ex.ExtractToolOutput(Call("get_order_details", "c1"), kDelivered));
  conv.Commit(ex.ExtractUserMessage("order #W1234567 is delivered"));
  CHECK(conv.Live(Category::kFact, "order.#W1234567.status")->provenance.verified);
  CHECK(conv.Live(Category::kCondition, "conflict.fact.order.#W1234567.status") == nullptr);
}

std::shared_ptr<const ExtractionRules> SubscriptionRules() {
  auto r = ExtractionRules::Load(
      std::filesystem::path(TASKLEDGER_SOURCE_DIR) / "rules" / "subscription", "sub-v1");
  INFO((r.has_value() ? std::string() : r.error().ToString()));
  REQUIRE(r.has_value());
  return r.value();
}

TEST_CASE("subscription: grace period, then active; history keeps the stale status",
          "[extract][ledger][subscription]") {
  Conversation conv("subscription");
  Extractor ex(SubscriptionRules(), {.clock = &conv.clock});
  const int64_t t0 = conv.clock.NowMs();

  conv.Commit(ex.ExtractToolOutput(Call("get_subscription", "c1"),
                                   R"({"status": "grace_period", "days_remaining": 5})"));
  const Entry* status = conv.Live(Category::kFact, "subscription_status");
  REQUIRE(status != nullptr);
  CHECK(status->value == "grace_period");
  CHECK(status->provenance.verified);
  CHECK(status->provenance.source_id == "get_subscription#c1");
  CHECK(status->provenance.rule_id == "sub.status");
  CHECK(status->provenance.pack_version == "sub-v1");
  const Entry* grace = conv.Live(Category::kConstraint, "grace_period_days");
  REQUIRE(grace != nullptr);
  CHECK(grace->value == 5);
  CHECK(grace->expires_at_ms == t0 + 5 * kDayMs);

  conv.clock.Advance(60'000);
  conv.Commit(
      ex.ExtractToolOutput(Call("get_subscription", "c2"), R"({"subscription_status": "active"})"));
  status = conv.Live(Category::kFact, "subscription_status");
  REQUIRE(status != nullptr);
  CHECK(status->value == "active");
  CHECK(status->provenance.turn == 2);
  CHECK(status->provenance.rule_id == "sub.status_field");

  // Version 1 still reads the old value.
  auto v1 = conv.ledger->At(1);
  REQUIRE(v1.has_value());
  const Entry* old = v1.value().FindLive(Category::kFact, "subscription_status", t0);
  REQUIRE(old != nullptr);
  CHECK(old->value == "grace_period");
  auto diff = conv.ledger->DiffVersions(1, 2);
  REQUIRE(diff.has_value());
  REQUIRE(diff.value().changed.size() == 1);
  CHECK(diff.value().changed[0].key == "subscription_status");

  // The grace period counts down on the clock: live until 5 days after it was read.
  conv.clock.Set(t0 + 5 * kDayMs - 1);
  CHECK(conv.Live(Category::kConstraint, "grace_period_days") != nullptr);
  conv.clock.Set(t0 + 5 * kDayMs);
  CHECK(conv.Live(Category::kConstraint, "grace_period_days") == nullptr);
}

TEST_CASE("subscription: verify_identity sets the identity_verified condition",
          "[extract][ledger][subscription]") {
  Conversation conv("identity");
  Extractor ex(SubscriptionRules(), {.clock = &conv.clock});
  conv.Commit(ex.ExtractToolOutput(Call("verify_identity", "c1"), R"({"verified": true})"));
  const Entry* v = conv.Live(Category::kCondition, "identity_verified");
  REQUIRE(v != nullptr);
  CHECK(v->value == true);
  CHECK(v->provenance.verified);

  conv.Commit(ex.ExtractToolOutput(Call("verify_identity", "c2"), R"({"verified": false})"));
  CHECK(conv.Live(Category::kCondition, "identity_verified")->value == false);

  conv.Commit(ex.ExtractToolOutput(Call("verify_identity", "c3"), "Identity verified."));
  CHECK(conv.Live(Category::kCondition, "identity_verified")->value == true);

  // The user's yes is a claim, bound to the action the agent proposed.
  conv.Commit(ex.ExtractUserMessage(
      "yes", {{"tool", "cancel_subscription"}, {"arguments", json::object()}}));
  const Entry* confirmation = conv.Live(Category::kCondition, "confirmation");
  REQUIRE(confirmation != nullptr);
  CHECK(confirmation->value["action"]["tool"] == "cancel_subscription");
  CHECK_FALSE(confirmation->provenance.verified);
}

}  // namespace
}  // namespace taskledger
