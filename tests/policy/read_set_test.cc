// Decision evidence (#20 item 4): every rule evaluation records the ledger
// entries it read, each once, with the evidence the entry carried (digest of
// the value, the version and tool call that wrote it, verified or claimed,
// the extraction rule), absences included; cached lookups, record tables,
// ledger.each and a rule that fails all keep their reads; the set is bounded.
#include <catch2/catch.hpp>

#include "policy_test_util.h"
#include "taskledger/base/digest.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/policy/decision.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

Update Set(Category c, std::string key, nlohmann::json value, SourceKind source,
           const std::string& source_id, bool verified, const std::string& rule) {
  Update u;
  u.category = c;
  u.key = std::move(key);
  u.value = std::move(value);
  u.provenance.source = source;
  u.provenance.source_id = source_id;
  u.provenance.verified = verified;
  u.provenance.rule_id = rule;
  return u;
}

LedgerState Orders() {
  LedgerState s;
  TurnRecord t1;
  t1.turn = 1;
  t1.committed_at_ms = kNow;
  t1.updates = {Set(Category::kIdentifier, "user_id", "ann_1", SourceKind::kUserMessage, "user",
                    false, "user_id"),
                Set(Category::kFact, "order.#W1.status", "pending", SourceKind::kToolOutput,
                    "get_order_details#c3", true, "order_status")};
  REQUIRE(ApplyTurn(s, t1).ok());
  TurnRecord t2;
  t2.turn = 2;
  t2.committed_at_ms = kNow;
  t2.updates = {Set(Category::kFact, "order.#W1.total", 120, SourceKind::kToolOutput,
                    "get_order_details#c7", true, "order_total")};
  REQUIRE(ApplyTurn(s, t2).ok());
  return s;
}

const char* kRules = R"lua(
rule { id = "a.first", tools = {"write_*"}, priority = 10,
       check = function(call, ledger) return allow() end }
rule { id = "b.reads", tools = {"write_cancel"}, priority = 5,
       check = function(call, ledger)
         local who = ledger.identifier("user_id")
         local again = ledger.identifier("user_id")
         local status = ledger.fact("order.#W1.status")
         if ledger.confirmed() then return allow() end
         for id, total in ledger.each("fact", "order.{id}.total") do end
         return deny("not confirmed: " .. who .. " " .. status)
       end }
rule { id = "c.fails", tools = {"write_fail"},
       check = function(call, ledger)
         local r = ledger.record("order", "#W1")
         local s = r.status
         error("boom")
       end }
rule { id = "d.many", tools = {"write_many"},
       check = function(call, ledger)
         for i = 1, 300 do ledger.fact("k" .. i) end
         return allow()
       end }
)lua";

// Check, then resolve the reads the rules noted (as the Session does).
PolicyDecision CheckWithReads(PolicyChecker& checker, const std::string& tool, const LedgerState& s,
                              const ViewKey& key) {
  PolicyDecision d = checker.Check(CallOf(tool), s, key, kNow);
  REQUIRE(checker.ResolveReads(d, s).ok());
  return d;
}

}  // namespace

TEST_CASE("read set: each rule records the entries it read, with their evidence", "[policy]") {
  auto checker = MakeChecker(MakePack(kRules));
  const LedgerState s = Orders();
  const ViewKey key{"conv", 7};
  for (int pass = 0; pass < 2; ++pass) {  // the second pass answers from the value caches
    INFO("pass " << pass);
    PolicyDecision d = CheckWithReads(*checker, "write_cancel", s, key);
    REQUIRE(d.rule_id == "b.reads");
    REQUIRE(d.rules.size() == 2);
    CHECK(d.rules[0].reads.empty());  // a.first read nothing
    const std::vector<EntryRead>& reads = d.rules[1].reads;
    REQUIRE(reads.size() == 4);  // user_id once, though read twice
    CHECK(reads[0].category == Category::kIdentifier);
    CHECK(reads[0].key == "user_id");
    CHECK(reads[0].present);
    CHECK_FALSE(reads[0].verified);  // only claimed by the user
    CHECK(reads[0].source == SourceKind::kUserMessage);
    CHECK(reads[0].turn == 1);
    CHECK(reads[1].key == "order.#W1.status");
    CHECK(reads[1].verified);
    CHECK(reads[1].source == SourceKind::kToolOutput);
    CHECK(reads[1].source_id == "get_order_details#c3");
    CHECK(reads[1].rule == "order_status");
    CHECK(reads[1].digest == ArgsHash("pending").substr(0, 16));
    CHECK(reads[2].category == Category::kCondition);
    CHECK(reads[2].key == "confirmation");
    CHECK_FALSE(reads[2].present);  // the missing confirmation is what denied
    CHECK(reads[3].key == "order.#W1.total");
    CHECK(reads[3].turn == 2);
    CHECK(reads[3].source_id == "get_order_details#c7");
  }
}

TEST_CASE("read set: a value that changed shows another digest and version", "[policy]") {
  auto checker = MakeChecker(MakePack(kRules));
  LedgerState s = Orders();
  PolicyDecision before = CheckWithReads(*checker, "write_cancel", s, {"conv", 1});
  TurnRecord t3;
  t3.turn = 3;
  t3.committed_at_ms = kNow;
  t3.updates = {Set(Category::kFact, "order.#W1.status", "delivered", SourceKind::kToolOutput,
                    "get_order_details#c9", true, "order_status")};
  REQUIRE(ApplyTurn(s, t3).ok());
  PolicyDecision after = CheckWithReads(*checker, "write_cancel", s, {"conv", 2});
  REQUIRE(before.rules.size() == 2);
  REQUIRE(after.rules.size() == 2);
  const EntryRead& was = before.rules[1].reads[1];
  const EntryRead& now = after.rules[1].reads[1];
  CHECK(was.key == now.key);
  CHECK(was.digest != now.digest);
  CHECK(now.turn == 3);
  CHECK(now.source_id == "get_order_details#c9");
}

TEST_CASE("read set: a failing rule keeps what it read; the set is bounded", "[policy]") {
  auto checker = MakeChecker(MakePack(kRules));
  const LedgerState s = Orders();
  PolicyDecision failed = CheckWithReads(*checker, "write_fail", s, {});
  REQUIRE(failed.rule_id == "c.fails");
  REQUIRE(failed.rules.back().error);
  REQUIRE(failed.rules.back().reads.size() == 1);
  CHECK(failed.rules.back().reads[0].key == "order.#W1.status");
  CHECK(failed.rules.back().reads[0].present);

  PolicyDecision many = CheckWithReads(*checker, "write_many", s, {});
  const RuleEvaluation& ev = many.rules.back();
  CHECK(ev.reads.size() == 256);
  CHECK_FALSE(ev.reads[0].present);
  REQUIRE_FALSE(ev.log.empty());
  CHECK(ev.log.back().find("44 more entry reads not recorded") != std::string::npos);
  // The next check starts a new set.
  PolicyDecision next = CheckWithReads(*checker, "write_cancel", s, {});
  CHECK(next.rules[1].reads.size() == 4);
}

TEST_CASE("read set: the decision record carries the reads", "[policy]") {
  auto checker = MakeChecker(MakePack(kRules));
  PolicyDecision d = CheckWithReads(*checker, "write_cancel", Orders(), {});
  DecisionRecord rec = MakeDecisionRecord(d, CallOf("write_cancel"), {"conv", 3, 2, 0});
  REQUIRE(rec.deciding() != nullptr);
  CHECK(rec.deciding()->reads == d.rules[1].reads);
  nlohmann::json j = EncodeDecision(rec);
  CHECK(j["rules"][1]["reads"][1]["source_id"] == "get_order_details#c3");
  CHECK(j["rules"][1]["reads"][2]["present"] == false);
  CHECK_FALSE(j["rules"][0].contains("reads"));
  auto back = DecodeDecision(j);
  REQUIRE(back.has_value());
  CHECK(*back == rec);
}

TEST_CASE("read set: reads resolve only right after their check, on its state", "[policy]") {
  auto checker = MakeChecker(MakePack(kRules));
  const LedgerState s = Orders();
  PolicyDecision first = checker->Check(CallOf("write_cancel"), s, {}, kNow);
  PolicyDecision second = checker->Check(CallOf("write_cancel"), s, {}, kNow);
  CHECK(checker->ResolveReads(first, s).code() == StatusCode::kFailedPrecondition);
  CHECK(first.rules[1].reads.empty());
  const LedgerState other = Orders();
  CHECK(checker->ResolveReads(second, other).code() == StatusCode::kFailedPrecondition);
  REQUIRE(checker->ResolveReads(second, s).ok());
  CHECK(second.rules[1].reads.size() == 4);
  // A read-only tool runs no rule: nothing to resolve.
  PolicyDecision read = checker->Check(CallOf("get_order"), s, {}, kNow);
  CHECK(checker->ResolveReads(read, s).ok());
}
