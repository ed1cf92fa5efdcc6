// The record API: ledger.record (nested read-only tables with provenance per
// field), ledger.each (pattern captures over a range of keys), ledger.find
// (reverse lookups from the value index, followed across states by diffing),
// ids holding separators end to end (extraction -> ledger -> rule), and log().
#include <catch2/catch.hpp>

#include "policy_test_util.h"
#include "taskledger/extract/extraction_rules.h"
#include "taskledger/extract/extractor.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

std::unique_ptr<PolicyChecker> Probe(const std::string& body) {
  return MakeChecker(
      MakePack("rule { id = 'probe', tools = {'write_probe'}, check = function(call, ledger)\n" +
               body + "\nend }\n"));
}

// Runs `body` (which must return deny(text)) and gives the text.
std::string Run(const std::string& body, const LedgerState& s,
                nlohmann::json args = nlohmann::json::object()) {
  auto checker = Probe(body);
  PolicyDecision d = checker->Check(CallOf("write_probe", std::move(args)), s, {}, kNow);
  INFO(d.reason);
  REQUIRE(d.rule_id == "probe");
  return d.reason;
}

LedgerState Orders() {
  return StateOf(
      {{"version", 2},
       {"facts",
        {{"order.#W1.status", "pending"},
         {"order.#W1.user_id", "ann_1"},
         {"order.#W1.item.11.price", 10.5},
         {"order.#W1.item.12.price", 20},
         {"order.#W1.paid_with.gift_card_1", true},
         {"order.#W2.status", "delivered"},
         {"order.#W2.user_id", "bob_2"},
         {"order.#W3.status", "pending"},
         {"order.#W3.user_id", "ann_1"},
         {"order.#W4.user_id", {{"$entry", {{"value", "ann_1"}, {"expires_in_seconds", -1}}}}},
         {"user.ann_1.name", "Ann"}}}});
}

}  // namespace

TEST_CASE("record reads an entity as a nested read-only table", "[policy][records]") {
  LedgerState s = Orders();
  CHECK(Run("local o = ledger.record('order', '#W1')\n"
            "return deny(o.status .. ' ' .. o.user_id .. ' ' .. o.item['11'].price .. ' ' ..\n"
            "  o.item['12'].price .. ' ' .. tostring(o.paid_with.gift_card_1))",
            s) == "pending ann_1 10.5 20 true");
  CHECK(Run("return deny(tostring(ledger.record('order', '#W9')))", s) == "nil");
  // Read-only at every level.
  CHECK(Run("local o = ledger.record('order', '#W1')\n"
            "local ok, err = pcall(function() o.item['11'].price = 0 end)\n"
            "return deny(tostring(ok) .. ' ' .. tostring(getmetatable(o.item)))",
            s) == "false read-only");
  // pairs walks the fields; an expired entry is not part of the record.
  CHECK(Run("local n = 0\nfor k, v in pairs(ledger.record('order', '#W1').item) do n = n + 1 end\n"
            "return deny(tostring(n) .. ' ' .. tostring(ledger.record('order', '#W4')))",
            s) == "2 nil");
}

TEST_CASE("provenance is reachable for every field of a record", "[policy][records]") {
  LedgerState s = StateOf(
      {{"facts",
        {{"order.#W1.status", {{"$entry", {{"value", "pending"}, {"source_id", "get#c1"}}}}},
         {"order.#W1.item.11.price",
          {{"$entry", {{"value", 3}, {"verified", false}, {"turn", 4}}}}}}}});
  CHECK(Run("local o = ledger.record('order', '#W1')\n"
            "local p = ledger.provenance(o, 'status')\n"
            "local q = ledger.provenance(o.item['11'], 'price')\n"
            "return deny(p.source .. ' ' .. p.source_id .. ' ' .. tostring(p.verified) .. ' ' ..\n"
            "  q.source .. ' ' .. q.turn .. ' ' .. tostring(ledger.provenance(o, 'nope')))",
            s) == "tool get#c1 true user 4 nil");
  // Only tables ledger.record returned carry provenance.
  auto checker = Probe("return deny(tostring(ledger.provenance({}, 'status')))");
  PolicyDecision d = checker->Check(CallOf("write_probe"), s, {}, kNow);
  CHECK(d.reason.find("must be a table ledger.record returned") != std::string::npos);
}

TEST_CASE("each iterates the entities a pattern matches, with captures", "[policy][records]") {
  LedgerState s = Orders();
  CHECK(Run("local out = {}\n"
            "for id, status in ledger.each('fact', 'order.{id}.status') do\n"
            "  out[#out + 1] = id .. '=' .. status end\n"
            "return deny(table.concat(out, ','))",
            s) == "#W1=pending,#W2=delivered,#W3=pending");
  CHECK(Run("local out = {}\n"
            "for o, i, p in ledger.each('fact', 'order.{o}.item.{i}.price') do\n"
            "  out[#out + 1] = o .. '/' .. i .. '/' .. p end\n"
            "return deny(table.concat(out, ','))",
            s) == "#W1/11/10.5,#W1/12/20");
  // A last-segment capture, and nothing for a pattern that matches nothing.
  CHECK(Run("local out = {}\n"
            "for pm in ledger.each('fact', 'order.#W1.paid_with.{pm}') do out[#out + 1] = pm end\n"
            "for x in ledger.each('fact', 'nothing.{x}') do out[#out + 1] = x end\n"
            "return deny(table.concat(out, ','))",
            s) == "gift_card_1");
  // A malformed pattern is a rule error (fails closed) that says why.
  auto checker = Probe("for x in ledger.each('fact', 'order.x{id}') do end return allow()");
  PolicyDecision d = checker->Check(CallOf("write_probe"), s, {}, kNow);
  CHECK(d.outcome == Outcome::kDeny);
  CHECK(d.reason.find("must be a whole {name}") != std::string::npos);
}

TEST_CASE("find answers reverse lookups and follows later states", "[policy][records]") {
  LedgerState s = Orders();
  auto checker = Probe(
      "return deny(table.concat(ledger.find('fact', 'order.{id}.user_id', call.args.u), ','))");
  auto ask = [&](const LedgerState& st, const std::string& u, const ViewKey& key) {
    return checker->Check(CallOf("write_probe", {{"u", u}}), st, key, kNow).reason;
  };
  CHECK(ask(s, "ann_1", {"c", 1}) == "#W1,#W3");  // #W4 expired
  CHECK(ask(s, "bob_2", {"c", 1}) == "#W2");
  // A later state: one order changes hands, one is added; the index follows
  // by diffing instead of being rebuilt.
  LedgerState t = s;
  t.version = 3;
  t.of(Category::kFact).Set("order.#W3.user_id", s.of(Category::kFact).at("order.#W2.user_id"));
  t.of(Category::kFact).Set("order.#W5.user_id", s.of(Category::kFact).at("order.#W1.user_id"));
  CHECK(ask(t, "ann_1", {"c", 2}) == "#W1,#W5");
  CHECK(ask(t, "bob_2", {"c", 2}) == "#W2,#W3");
  // Multiple captures give a table per match; the pattern filters the keys.
  CHECK(Run("local r = ledger.find('fact', 'order.{o}.item.{i}.price', 20)\n"
            "return deny(#r .. ' ' .. r[1][1] .. ' ' .. r[1][2] .. ' ' ..\n"
            "  #ledger.find('fact', 'user.{u}.user_id', 'ann_1'))",
            s) == "1 #W1 12 0");
}

TEST_CASE("ids with separators and special characters work end to end", "[policy][records]") {
  auto rules = ExtractionRules::FromJson(
      {{"tools",
        {{"get_order",
          nlohmann::json::array({{{"id", "o.status"},
                                  {"path", "/status"},
                                  {"category", "fact"},
                                  {"key", "order.{/order_id}.status"}},
                                 {{"id", "o.user"},
                                  {"path", "/user_id"},
                                  {"category", "fact"},
                                  {"key", "order.{/order_id}.user_id"}},
                                 {{"id", "o.price"},
                                  {"path", "/items/*/price"},
                                  {"category", "fact"},
                                  {"key", "order.{/order_id}.item.{item_id}.price"}}})}}}},
      "v1");
  REQUIRE(rules.has_value());
  Extractor ex(rules.value());
  const std::vector<std::string> ids = {"#W.1", "{x}", "a*b", "with space", "ünï.cødé", "50%"};
  TurnRecord turn;
  turn.turn = 1;
  turn.committed_at_ms = kNow;
  for (const std::string& id : ids) {
    nlohmann::json out = {{"order_id", id},
                          {"status", "pending"},
                          {"user_id", "u.1"},
                          {"items", {{{"item_id", id + ".i"}, {"price", 7}}}}};
    Extraction e = ex.ExtractToolOutput(ProposedCall{"c", "get_order", {}}, out.dump());
    REQUIRE(e.errors.empty());
    for (Update& u : e.updates) turn.updates.push_back(std::move(u));
  }
  LedgerState s;
  REQUIRE(ApplyTurn(s, turn).ok());
  const std::string each =
      "local out = {}\nfor id, st in ledger.each('fact', 'order.{id}.status') do\n"
      "  local o = ledger.record('order', id)\n"
      "  local item, price = next({}) \n"
      "  for i, p in ledger.each('fact', 'order.' .. std.key(id) .. '.item.{i}.price') do\n"
      "    item, price = i, p end\n"
      "  out[#out + 1] = '[' .. id .. '|' .. o.status .. '|' .. o.user_id .. '|' .. item .. '|' "
      "..\n"
      "    o.item[item].price .. ']' end\n"
      "return deny(table.concat(out))";
  std::string got = Run(each, s);
  for (const std::string& id : ids) {
    CHECK(got.find("[" + id + "|pending|u.1|" + id + ".i|7]") != std::string::npos);
  }
  CHECK(Run("return deny(#ledger.find('fact', 'order.{id}.user_id', 'u.1') .. '')", s) == "6");
}

TEST_CASE("log lines reach the decision record, bounded", "[policy][log]") {
  auto checker = Probe(
      "log('order', call.args.n, {}, nil)\n"
      "for i = 1, 30 do log(string.rep('x', 1000)) end\n"
      "return deny('no')");
  PolicyDecision d = checker->Check(CallOf("write_probe", {{"n", 3}}), LedgerState{}, {}, kNow);
  REQUIRE(d.rules.size() == 1);
  const auto& log = d.rules[0].log;
  REQUIRE(log.size() == 21);
  CHECK(log[0].rfind("order 3 table: ", 0) == 0);
  CHECK(log[0].substr(log[0].size() - 4) == " nil");
  CHECK(log[1].size() <= 503);
  CHECK(log[20] == "(11 more log lines dropped)");
  nlohmann::json rec = DecisionLogRecord(d, CallOf("write_probe"), {});
  CHECK(rec["rules"][0]["log"].size() == 21);
  CHECK(d.reason == "no");  // the reason (what the prompt gets) holds no log line
  // A rule that errors keeps what it logged: that is when it is needed most.
  auto broken = Probe("log('before', 1)\nreturn ledger.nope(call)");
  d = broken->Check(CallOf("write_probe"), LedgerState{}, {}, kNow);
  REQUIRE(d.rules.size() == 1);
  CHECK(d.rules[0].error);
  CHECK(d.rules[0].log == std::vector<std::string>{"before 1"});
  // Invalid UTF-8 is replaced, so the record always serialises.
  auto bytes = Probe("log('a\\xff\\xfeb') return deny('x')");
  d = bytes->Check(CallOf("write_probe"), LedgerState{}, {}, kNow);
  CHECK(d.rules[0].log[0] ==
        "a\xEF\xBF\xBD\xEF\xBF\xBD"
        "b");
}

TEST_CASE("each rule's log lines stay with the rule that wrote them", "[policy][log]") {
  auto checker = MakeChecker(
      MakePack("rule { id = 'a', priority = 30, tools = {'write_probe'}, check = function()\n"
               "  log('from a') return allow() end }\n"
               "rule { id = 'b', priority = 20, tools = {'write_probe'}, check = function()\n"
               "  return allow() end }\n"
               "rule { id = 'c', priority = 10, tools = {'write_probe'}, check = function()\n"
               "  log('from c', 1) log('from c', 2) return deny('no') end }\n"));
  PolicyDecision d = checker->Check(CallOf("write_probe"), LedgerState{}, {}, kNow);
  REQUIRE(d.rules.size() == 3);
  CHECK(d.rules[0].rule_id == "a");
  CHECK(d.rules[0].log == std::vector<std::string>{"from a"});
  CHECK(d.rules[1].log.empty());
  CHECK(d.rules[2].log == std::vector<std::string>{"from c 1", "from c 2"});
  // The next check starts with no line of this one.
  d = checker->Check(CallOf("write_probe"), LedgerState{}, {}, kNow);
  CHECK(d.rules[0].log == std::vector<std::string>{"from a"});
}

TEST_CASE("a 0.1 pack that defines its own log global still loads", "[policy][log]") {
  auto checker =
      MakeChecker(MakePack("local lines = {}\nfunction log(x) lines[#lines + 1] = x end\n"
                           "rule { id = 'r', tools = {'write_probe'}, check = function(call)\n"
                           "  log('mine') return deny('n=' .. #lines) end }\n"));
  PolicyDecision d = checker->Check(CallOf("write_probe"), LedgerState{}, {}, kNow);
  CHECK(d.reason == "n=1");
  CHECK(d.rules[0].log.empty());
}

TEST_CASE("recorded_calls exposes earlier calls newest first", "[policy][records]") {
  LedgerState s = StateOf(
      {{"calls",
        {{{"tool", "update_cabin"}, {"arguments", {{"cabin", "economy"}}}},
         {{"tool", "get_order"}, {"arguments", {{"order_id", "#W1"}}}},
         {{"tool", "update_cabin"}, {"arguments", {{"cabin", "business"}}}, {"outcome", "error"}},
         {{"tool", "update_cabin"}, {"arguments", {{"cabin", "first"}}}}}}});
  CHECK(Run("local out = {}\n"
            "for _, c in ipairs(ledger.recorded_calls('update_*')) do\n"
            "  out[#out + 1] = c.tool .. ':' .. c.args.cabin .. ':' .. c.outcome end\n"
            "return deny(table.concat(out, ','))",
            s) == "update_cabin:first:ok,update_cabin:business:error,update_cabin:economy:ok");
  CHECK(Run("local c = ledger.recorded_calls('*', 2)\n"
            "return deny(#c .. ' ' .. c[2].tool .. ' ' .. c[2].args.cabin)",
            s) == "2 update_cabin business");
  // The arguments are read-only.
  CHECK(Run("local c = ledger.recorded_calls('get_order')[1]\n"
            "local ok = pcall(function() c.args.order_id = 'x' end)\n"
            "return deny(tostring(ok) .. ' ' .. c.args.order_id)",
            s) == "false #W1");
}

TEST_CASE("record fields are read lazily and pairs lists them", "[policy][records]") {
  LedgerState s = StateOf(
      {{"facts",
        {{"order.#W1.status", "pending"},
         {"order.#W1.payment", "split"},
         {"order.#W1.payment.gc_1", 5},
         {"order.#W1.item.11.price", 10.5},
         {"order.#W1.item.11.gone", {{"$entry", {{"value", 1}, {"expires_in_seconds", -1}}}}},
         {"order.#W1.item.12!x.price", 1},
         {"order.#W1.tags", nlohmann::json::array({"a", "b"})},
         {"order.#W10.status", "other"}}}});
  // A value wins over keys below it; a number index reads as its text;
  // a structured value is read-only and whole.
  CHECK(Run("local o = ledger.record('order', '#W1')\n"
            "return deny(o.payment .. ' ' .. o.item[11].price .. ' ' .. #o.tags .. o.tags[2] ..\n"
            "  ' ' .. tostring(o.item[11].gone) .. ' ' .. tostring(o.nope) .. ' ' .. #o)",
            s) == "split 10.5 2b nil nil 0");
  CHECK(Run("local out = {}\n"
            "for k, v in pairs(ledger.record('order', '#W1')) do\n"
            "  out[#out + 1] = k .. '=' .. (type(v) == 'table' and 'table' or tostring(v)) end\n"
            "table.sort(out)\n"
            "local items = {}\n"
            "for k in pairs(ledger.record('order', '#W1').item) do items[#items + 1] = k end\n"
            "table.sort(items)\n"
            "return deny(table.concat(out, ',') .. ' | ' .. table.concat(items, ','))",
            s) == "item=table,payment=split,status=pending,tags=table | 11,12!x");
  // A record kept past its check reads the state of the check in progress
  // (the table holds a key prefix, not values).
  auto checker = MakeChecker(
      MakePack("local kept\n"
               "rule { id = 'probe', tools = {'write_probe'}, check = function(call, ledger)\n"
               "  if kept then return deny(tostring(kept.status)) end\n"
               "  kept = ledger.record('order', '#W1') return allow() end }\n"));
  CHECK(checker->Check(CallOf("write_probe"), s, {}, kNow).allowed());
  LedgerState later = StateOf({{"facts", {{"order.#W1.status", "delivered"}}}});
  CHECK(checker->Check(CallOf("write_probe"), later, {}, kNow).reason == "delivered");
}
