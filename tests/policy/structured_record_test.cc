// Extraction keeps structure (issue #18, Must-have 2): one order stored whole
// (one entry, one provenance) or as fields (one entry per scalar) reads
// through ledger.record either way, and ledger.provenance answers for both.
#include <catch2/catch.hpp>

#include "policy_test_util.h"
#include "taskledger/extract/extraction_rules.h"
#include "taskledger/extract/extractor.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// The state after get_order returned `order`, mapped with "store": `store`.
LedgerState AfterOrder(const std::string& store, const nlohmann::json& order) {
  auto rules = ExtractionRules::FromJson(
      {{"tools",
        {{"get_order", nlohmann::json::array({{{"id", "order"},
                                               {"path", ""},
                                               {"category", "fact"},
                                               {"key", "order.{order_id}"},
                                               {"store", store}}})}}}},
      "v1");
  REQUIRE(rules.has_value());
  Extractor ex(rules.value());
  Extraction e = ex.ExtractToolOutput(ProposedCall{"call-7", "get_order", {}}, order.dump());
  REQUIRE(e.errors.empty());
  TurnRecord turn;
  turn.turn = 1;
  turn.committed_at_ms = kNow;
  turn.updates = std::move(e.updates);
  LedgerState s;
  REQUIRE(ApplyTurn(s, turn).ok());
  return s;
}

std::string Run(const std::string& body, const LedgerState& s) {
  auto checker = MakeChecker(
      MakePack("rule { id = 'probe', tools = {'write_probe'}, check = function(call, ledger)\n" +
               body + "\nend }\n"));
  PolicyDecision d = checker->Check(CallOf("write_probe"), s, {}, kNow);
  INFO(d.reason);
  REQUIRE(d.rule_id == "probe");
  return d.reason;
}

const nlohmann::json kOrder = {{"order_id", "#W.1"},
                               {"status", "pending"},
                               {"user_id", "ann"},
                               {"address", {{"city", "Austin"}}},
                               {"items", {{{"item_id", "11"}, {"price", 12.5}}}}};

}  // namespace

TEST_CASE("an order stored whole reads as a record with one provenance", "[policy][records]") {
  LedgerState s = AfterOrder("whole", kOrder);
  REQUIRE(s.size() == 1);
  CHECK(Run("local o = ledger.record('order', '#W.1')\n"
            "return deny(o.status .. ' ' .. o.address.city .. ' ' .. o.items[1].price)",
            s) == "pending Austin 12.5");
  // One entry: every field it holds has that entry's provenance; others none.
  CHECK(Run("local o = ledger.record('order', '#W.1')\n"
            "local p = ledger.provenance(o, 'status')\n"
            "return deny(p.source_id .. ' ' .. p.rule .. ' ' .. tostring(p.verified) .. ' ' ..\n"
            "  tostring(ledger.provenance(o, 'nope')))",
            s) == "get_order#call-7 order true nil");
  // Read-only, as every record.
  CHECK(Run("local ok = pcall(function() ledger.record('order', '#W.1').status = 'x' end)\n"
            "return deny(tostring(ok))",
            s) == "false");
  // An entity that was never stored is nil, as is a key holding a scalar.
  CHECK(Run("return deny(tostring(ledger.record('order', '#W2')) .. ' ' ..\n"
            "  tostring(ledger.record('order', '#W.1', 'identifier')))",
            s) == "nil nil");
}

TEST_CASE("an order stored as fields reads as a record with provenance per field",
          "[policy][records]") {
  LedgerState s = AfterOrder("fields", kOrder);
  CHECK(s.size() == 6);
  // Arrays stored as fields are keyed by 0-based index (as JSON pointers).
  CHECK(Run("local o = ledger.record('order', '#W.1')\n"
            "return deny(o.status .. ' ' .. o.address.city .. ' ' .. o.items[0].price)",
            s) == "pending Austin 12.5");
  CHECK(Run("local o = ledger.record('order', '#W.1')\n"
            "local p = ledger.provenance(o.items[0], 'price')\n"
            "return deny(p.source_id .. ' ' .. p.rule .. ' ' .. tostring(p.value))",
            s) == "get_order#call-7 order 12.5");
  // Fields can be found and iterated like any keys.
  CHECK(Run("local ids = ledger.find('fact', 'order.{id}.user_id', 'ann')\n"
            "return deny(#ids .. ' ' .. ids[1])",
            s) == "1 #W.1");
}
