// The rule API: ledger lookups, provenance, grounding (observed), confirmation,
// call counting, and reuse of the ledger view while the state is unchanged.
#include <catch2/catch.hpp>

#include "policy_test_util.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// write_probe denies with a reason that reports what the rule saw, so each
// test can assert on the ledger functions from the outside.
std::unique_ptr<PolicyChecker> Probe(const std::string& expr) {
  return MakeChecker(
      MakePack("rule { id = 'probe', tools = {'write_probe'}, check = function(call, ledger)\n"
               "  return deny(tostring(" +
               expr + "))\nend }\n"));
}

std::string Eval(const std::string& expr, const LedgerState& s,
                 nlohmann::json args = nlohmann::json::object(), int64_t now = kNow) {
  auto checker = Probe(expr);
  PolicyDecision d = checker->Check(CallOf("write_probe", std::move(args)), s, {}, now);
  INFO(d.reason);
  REQUIRE(d.rule_id == "probe");
  return d.reason;
}

}  // namespace

TEST_CASE("ledger lookups return live values by category", "[policy]") {
  LedgerState s = StateOf(
      {{"version", 3},
       {"facts", {{"order.W1.status", "pending"}, {"n", 5}}},
       {"identifiers", {{"user_id", "ann_1"}}},
       {"constraints", {{"limit", {{"$entry", {{"value", 1}, {"expires_in_seconds", -1}}}}}}},
       {"conditions", {{"vip", true}}}});
  CHECK(Eval("ledger.fact('order.W1.status')", s) == "pending");
  CHECK(Eval("ledger.fact('n') + 1", s) == "6");
  CHECK(Eval("ledger.identifier('user_id')", s) == "ann_1");
  CHECK(Eval("ledger.condition('vip')", s) == "true");
  CHECK(Eval("ledger.constraint('limit')", s) == "nil");  // expired
  CHECK(Eval("ledger.fact('missing')", s) == "nil");
  CHECK(Eval("ledger.version .. '/' .. ledger.turn", s) == "3/4");
  CHECK(Eval("table.concat(ledger.keys('fact', 'order.'), ',')", s) == "order.W1.status");
  CHECK(Eval("#ledger.keys('facts')", s) == "2");
}

TEST_CASE("entry and verified expose provenance", "[policy]") {
  LedgerState s = StateOf(
      {{"facts",
        {{"tool_said", 1}, {"user_said", {{"$entry", {{"value", 2}, {"verified", false}}}}}}}});
  CHECK(Eval("ledger.verified('fact', 'tool_said')", s) == "true");
  CHECK(Eval("ledger.verified('fact', 'user_said')", s) == "false");
  CHECK(Eval("ledger.entry('fact', 'user_said').source", s) == "user");
  CHECK(Eval("ledger.entry('fact', 'tool_said').source", s) == "tool");
  CHECK(Eval("ledger.entry('fact', 'nothing')", s) == "nil");
  // A bad category is a rule error, and errors fail closed.
  auto checker = Probe("ledger.entry('facty', 'x')");
  PolicyDecision d = checker->Check(CallOf("write_probe"), s, {}, kNow);
  CHECK(d.outcome == Outcome::kDeny);
  CHECK(d.reason.find("policy error in rule probe") == 0);
}

TEST_CASE("known gives the value and whether a tool output verified it", "[policy]") {
  LedgerState s = StateOf({{"facts",
                            {{"tool_said", "pending"},
                             {"user_said", {{"$entry", {{"value", 2}, {"verified", false}}}}},
                             {"gone", {{"$entry", {{"value", "x"}, {"expires_in_seconds", -1}}}}},
                             {"items", nlohmann::json::array({"a", "b"})}}},
                           {"identifiers", {{"user.authenticated.ann", "ann_1"}}}});
  auto both = [&](const std::string& category, const std::string& key) {
    return Eval("select('#', ledger.known('" + category + "', '" + key + "')) .. ' ' .. " +
                    "tostring(ledger.known('" + category + "', '" + key + "')) .. ' ' .. " +
                    "tostring(select(2, ledger.known('" + category + "', '" + key + "')))",
                s);
  };
  CHECK(both("fact", "tool_said") == "2 pending true");
  CHECK(both("fact", "user_said") == "2 2 false");
  CHECK(both("fact", "gone") == "2 nil false");  // expired: neither value nor verified
  CHECK(both("fact", "nothing") == "2 nil false");
  CHECK(both("identifier", "user.authenticated.ann") == "2 ann_1 true");
  CHECK(both("fact", "user.authenticated.ann") == "2 nil false");  // another category
  // A structured value is a copy, as from ledger.fact.
  CHECK(Eval("(function() local v = ledger.known('fact', 'items'); v[3] = 'c'; "
             "return #v .. #ledger.known('fact', 'items') end)()",
             s) == "32");
  for (const char* bad : {"ledger.known('facty', 'x')", "ledger.known('fact', 3)"}) {
    auto checker = Probe(bad);
    PolicyDecision d = checker->Check(CallOf("write_probe"), s, {}, kNow);
    CHECK(d.outcome == Outcome::kDeny);
    CHECK(d.reason.find("policy error in rule probe") == 0);
    CHECK(d.reason.find("ledger.known") != std::string::npos);
  }
}

TEST_CASE("fields gives value and verified for several fields of one key prefix", "[policy]") {
  LedgerState s =
      StateOf({{"facts",
                {{"order.W1.status", "pending"},
                 {"order.W1.user_id", {{"$entry", {{"value", "ann_1"}, {"verified", false}}}}},
                 {"order.W1.total", {{"$entry", {{"value", 9}, {"expires_in_seconds", -1}}}}},
                 {"order.W1.items", nlohmann::json::array({"a", "b"})}}}});
  CHECK(Eval("(function() local r = table.pack(ledger.fields('fact', 'order.W1', 'status', "
             "'user_id', 'total', 'nope', 'items')); local out = {r.n} "
             "for i = 1, r.n do out[#out + 1] = type(r[i]) == 'table' and #r[i] or tostring(r[i]) "
             "end return table.concat(out, ' ') end)()",
             s) == "10 pending true ann_1 false nil false nil false 2 true");
  CHECK(Eval("select('#', ledger.fields('fact', 'order.W1'))", s) == "0");
  for (const char* bad : {"ledger.fields('facty', 'x', 'y')", "ledger.fields('fact', 'x', 3)",
                          "ledger.fields('fact', nil, 'y')"}) {
    auto checker = Probe(bad);
    PolicyDecision d = checker->Check(CallOf("write_probe"), s, {}, kNow);
    CHECK(d.outcome == Outcome::kDeny);
    CHECK(d.reason.find("ledger.fields") != std::string::npos);
  }
}

TEST_CASE("single gives the one verified live entry under a prefix and how many there are",
          "[policy]") {
  auto single = [](nlohmann::json identifiers) {
    return Eval(
        "(function() local v, n = ledger.single('identifier', 'user.auth.'); "
        "return tostring(v) .. ' ' .. n .. ' ' .. select('#', ledger.single('identifier', "
        "'user.auth.')) end)()",
        StateOf({{"identifiers", std::move(identifiers)}}));
  };
  CHECK(single(nlohmann::json::object()) == "nil 0 2");
  // Claimed (unverified), expired and outside the prefix do not count.
  nlohmann::json ids = {
      {"user.auth.ann", "ann_1"},
      {"user.auth.bob", {{"$entry", {{"value", "bob_2"}, {"verified", false}}}}},
      {"user.auth.cy", {{"$entry", {{"value", "cy_3"}, {"expires_in_seconds", -1}}}}},
      {"user.authx", "dee_4"},
      {"user.other", "eve_5"}};
  CHECK(single(ids) == "ann_1 1 2");
  ids["user.auth.zed"] = "zed_9";
  CHECK(single(ids) == "nil 2 2");  // several: no value, the count says so
  for (const char* bad : {"ledger.single('facty', 'x')", "ledger.single('identifier')"}) {
    auto checker = Probe(bad);
    PolicyDecision d =
        checker->Check(CallOf("write_probe"), StateOf(nlohmann::json::object()), {}, kNow);
    CHECK(d.outcome == Outcome::kDeny);
    CHECK(d.reason.find("ledger.single") != std::string::npos);
  }
}

TEST_CASE("observed grounds arguments in tool outputs only", "[policy]") {
  LedgerState s =
      StateOf({{"facts",
                {{"order.W1.items", nlohmann::json::array({"item_7", "item_8"})},
                 {"order.W1.total", 12.0},
                 {"claimed", {{"$entry", {{"value", "item_9"}, {"verified", false}}}}}}}});
  CHECK(Eval("ledger.observed(call.args.item)", s, {{"item", "item_8"}}) == "true");
  CHECK(Eval("ledger.observed(call.args.item)", s, {{"item", "item_9"}}) == "false");  // user claim
  CHECK(Eval("ledger.observed('made_up')", s) == "false");
  CHECK(Eval("ledger.observed(12)", s) == "true");  // 12 and 12.0 are the same number
  CHECK(Eval("ledger.observed('12')", s) == "false");
  CHECK(Eval("ledger.observed(nil)", s) == "false");
}

TEST_CASE("the observed index is reused for one view key and rebuilt when it changes", "[policy]") {
  auto checker = Probe("ledger.observed('x')");
  LedgerState with = StateOf({{"facts", {{"k", "x"}}}});
  LedgerState without = StateOf({{"facts", {{"k", "y"}}}});
  ProposedCall call = CallOf("write_probe");
  CHECK(checker->Check(call, with, {"conv", 1}, kNow).reason == "true");
  // Same key: the index built for generation 1 is reused (the contract says
  // equal keys mean equal states, so the stale answer proves the reuse).
  CHECK(checker->Check(call, without, {"conv", 1}, kNow).reason == "true");
  CHECK(checker->Check(call, without, {"conv", 2}, kNow).reason == "false");
  // An empty key never reuses.
  CHECK(checker->Check(call, with, {}, kNow).reason == "true");
  CHECK(checker->Check(call, without, {}, kNow).reason == "false");
}

TEST_CASE("the reused view still honours wall-clock expiry", "[policy]") {
  auto checker = Probe("ledger.observed('x')");
  LedgerState s =
      StateOf({{"facts", {{"k", {{"$entry", {{"value", "x"}, {"expires_in_seconds", 10}}}}}}}});
  ProposedCall call = CallOf("write_probe");
  CHECK(checker->Check(call, s, {"conv", 1}, kNow).reason == "true");
  CHECK(checker->Check(call, s, {"conv", 1}, kNow + 9'000).reason == "true");
  CHECK(checker->Check(call, s, {"conv", 1}, kNow + 10'000).reason == "false");
}

TEST_CASE("confirmed needs a live confirmation not bound to another action", "[policy]") {
  nlohmann::json args = {{"order_id", "#W1"}};
  auto with_action = [&](nlohmann::json action) {
    return StateOf({{"conditions", {{"confirmation", {{"text", "yes"}, {"action", action}}}}}});
  };
  CHECK(Eval("ledger.confirmed(call)", LedgerState{}, args) == "false");
  CHECK(Eval("ledger.confirmed(call)", with_action(nullptr), args) == "true");
  CHECK(Eval("ledger.confirmed(call)", with_action({{"tool", "write_probe"}, {"args", args}}),
             args) == "true");
  CHECK(Eval("ledger.confirmed(call)",
             with_action({{"tool", "write_probe"}, {"args", {{"order_id", "#W2"}}}}),
             args) == "false");
  CHECK(Eval("ledger.confirmed(call)", with_action({{"tool", "write_other"}, {"args", args}}),
             args) == "false");
  LedgerState expired = StateOf(
      {{"conditions",
        {{"confirmation",
          {{"$entry",
            {{"value", {{"text", "yes"}, {"action", nullptr}}}, {"expires_in_seconds", -5}}}}}}}});
  CHECK(Eval("ledger.confirmed(call)", expired, args) == "false");
}

TEST_CASE("calls counts successful calls by tool glob and argument", "[policy]") {
  LedgerState s = StateOf(
      {{"calls",
        {{{"tool", "write_refund"}, {"arguments", {{"order_id", "#W1"}, {"amount", 5}}}},
         {{"tool", "write_refund"}, {"arguments", {{"order_id", "#W2"}, {"amount", 5.0}}}},
         {{"tool", "write_refund"}, {"arguments", {{"order_id", "#W1"}}}, {"outcome", "denied"}},
         {{"tool", "write_exchange"}, {"arguments", {{"order_id", "#W1"}}}, {"outcome", "ok"}}}}});
  CHECK(Eval("ledger.calls('write_refund')", s) == "2");
  CHECK(Eval("ledger.calls('write_*')", s) == "3");
  CHECK(Eval("ledger.calls('write_refund', 'order_id', '#W1')", s) == "1");
  CHECK(Eval("ledger.calls('write_refund', 'amount', 5)", s) == "2");
  // A string value matches string arguments only, byte for byte.
  CHECK(Eval("ledger.calls('write_refund', 'amount', '5')", s) == "0");
  CHECK(Eval("ledger.calls('write_refund', 'order_id', '#W3')", s) == "0");
  CHECK(Eval("ledger.calls('write_refund', 'order_id', '#W')", s) == "0");
  CHECK_THAT(Eval("select(2, pcall(ledger.calls, 'write_refund', 'order_id', '\\255'))", s),
             Catch::Contains("not valid UTF-8"));
  CHECK(Eval("ledger.calls('get_*')", s) == "0");
}

TEST_CASE("rules see the call's tool, id and arguments", "[policy]") {
  nlohmann::json args = {{"order_id", "#W1"}, {"items", {"a", "b", "c"}}, {"meta", {{"k", 1}}}};
  CHECK(Eval("call.tool .. ' ' .. call.id", LedgerState{}, args) == "write_probe c1");
  CHECK(Eval("#call.args.items .. call.args.items[3]", LedgerState{}, args) == "3c");
  CHECK(Eval("call.args.meta.k", LedgerState{}, args) == "1");
  CHECK(
      Eval("(function() local n = 0 for k, v in pairs(call.args) do n = n + 1 end return n end)()",
           LedgerState{}, args) == "3");
  CHECK(Eval("(function() local s = '' for i, v in ipairs(call.args.items) do s = s .. v end "
             "return s end)()",
             LedgerState{}, args) == "abc");
}

TEST_CASE("call arguments are read-only tables at every depth", "[policy]") {
  nlohmann::json args = {{"order_id", "#W1"},
                         {"item_ids", {"a", "b", "c"}},
                         {"address", {{"zip", "19122"}, {"lines", {"763 Broadway", "Suite 135"}}}}};
  // type() says table for the arguments, nested objects and arrays, and the ledger.
  CHECK(Eval("type(call.args) .. type(call.args.item_ids) .. type(call.args.address) .. "
             "type(call.args.address.lines) .. type(call) .. type(ledger)",
             LedgerState{}, args) == "tabletabletabletabletabletable");
  CHECK(Eval("#call.args.item_ids .. #call.args.address.lines", LedgerState{}, args) == "32");
  CHECK(
      Eval("call.args.item_ids[2] .. call.args.address.lines[2] .. tostring(call.args.item_ids[4])",
           LedgerState{}, args) == "bSuite 135nil");
  CHECK(Eval("(function() local s = '' for i, v in ipairs(call.args.address.lines) do "
             "s = s .. i .. '=' .. v .. ';' end return s end)()",
             LedgerState{}, args) == "1=763 Broadway;2=Suite 135;");
  CHECK(Eval("(function() local k = {} for name, v in pairs(call.args.address) do k[#k + 1] = name "
             "end "
             "table.sort(k) return table.concat(k, ',') end)()",
             LedgerState{}, args) == "lines,zip");
  CHECK(
      Eval("table.concat(call.args.item_ids, '+') .. select('#', table.unpack(call.args.item_ids))",
           LedgerState{}, args) == "a+b+c3");
  // Arrays of arguments are arrays to the rule (what string_list helpers test).
  CHECK(Eval("(function() local v = call.args.item_ids "
             "return type(v) == 'table' and #v > 0 and v[1] == 'a' end)()",
             LedgerState{}, args) == "true");
}

TEST_CASE("writes to read-only tables raise and change nothing", "[policy]") {
  nlohmann::json args = {
      {"order_id", "#W1"}, {"item_ids", {"a", "b"}}, {"address", {{"zip", "19122"}}}};
  LedgerState s = StateOf({{"facts", {{"k", "v"}}}});
  // Each attempt runs under pcall; the rule reports the error, then shows the
  // data is unchanged.
  auto attempt = [&](const std::string& stmt, const std::string& after) {
    return Eval("(function() local ok, err = pcall(function() " + stmt +
                    " end) "
                    "return tostring(ok) .. ' ' .. tostring(err) .. ' | ' .. tostring(" +
                    after + ") end)()",
                s, args);
  };
  CHECK_THAT(attempt("call.args.order_id = '#W0'", "call.args.order_id"),
             Catch::StartsWith("false") && Catch::Contains("cannot set field 'order_id'") &&
                 Catch::Contains("read-only") && Catch::EndsWith("| #W1"));
  CHECK_THAT(attempt("call.args.item_ids[1] = 'z'", "call.args.item_ids[1]"),
             Catch::StartsWith("false") && Catch::Contains("cannot set field '1'") &&
                 Catch::EndsWith("| a"));
  CHECK_THAT(
      attempt("call.args.address.zip = '0'", "call.args.address.zip"),
      Catch::StartsWith("false") && Catch::Contains("read-only") && Catch::EndsWith("| 19122"));
  CHECK_THAT(
      attempt("call.args.address.city = 'x'", "call.args.address.city"),
      Catch::StartsWith("false") && Catch::Contains("read-only") && Catch::EndsWith("| nil"));
  CHECK_THAT(attempt("table.insert(call.args.item_ids, 'c')", "#call.args.item_ids"),
             Catch::StartsWith("false") && Catch::Contains("read-only") && Catch::EndsWith("| 2"));
  CHECK_THAT(attempt("table.remove(call.args.item_ids)", "#call.args.item_ids"),
             Catch::StartsWith("false") && Catch::Contains("read-only") && Catch::EndsWith("| 2"));
  CHECK_THAT(attempt("table.sort(call.args.item_ids, function(a, b) return a > b end)",
                     "call.args.item_ids[1]"),
             Catch::StartsWith("false") && Catch::Contains("read-only") && Catch::EndsWith("| a"));
  CHECK_THAT(attempt("setmetatable(call.args.item_ids, {})", "#call.args.item_ids"),
             Catch::StartsWith("false") && Catch::Contains("protected metatable") &&
                 Catch::EndsWith("| 2"));
  CHECK_THAT(attempt("ledger.fact = function() return 'x' end", "ledger.fact('k')"),
             Catch::StartsWith("false") && Catch::Contains("read-only") && Catch::EndsWith("| v"));
  CHECK_THAT(attempt("rawset(call.args, 'order_id', '#W0')", "call.args.order_id"),
             Catch::StartsWith("false") && Catch::Contains("undeclared global 'rawset'") &&
                 Catch::EndsWith("| #W1"));
  // The metatable is hidden, and raw access sees only the empty proxy: it
  // neither reveals nor changes the data.
  CHECK(Eval("getmetatable(call.args.item_ids)", s, args) == "read-only");
  CHECK(Eval("tostring(rawget(call.args, 'order_id')) .. rawlen(call.args.item_ids) .. "
             "tostring(next(call.args)) .. tostring(rawequal(call.args, call.args))",
             s, args) == "nil0niltrue");
  // An unhandled write fails the rule closed.
  auto checker = Probe("(function() call.args.item_ids[1] = 'z' end)()");
  PolicyDecision d = checker->Check(CallOf("write_probe", args), s, {}, kNow);
  CHECK(d.outcome == Outcome::kDeny);
  CHECK(d.rules.at(0).error);
  CHECK_THAT(d.reason, Catch::Contains("read-only"));
}

TEST_CASE("value lookups are reused per view key, honour expiry and copy tables", "[policy]") {
  auto checker = Probe("ledger.fact('k')");
  LedgerState s =
      StateOf({{"facts", {{"k", {{"$entry", {{"value", "x"}, {"expires_in_seconds", 10}}}}}}}});
  LedgerState other = StateOf({{"facts", {{"k", "y"}}}});
  ProposedCall call = CallOf("write_probe");
  CHECK(checker->Check(call, s, {"conv", 1}, kNow).reason == "x");
  CHECK(checker->Check(call, s, {"conv", 1}, kNow + 9'000).reason == "x");
  CHECK(checker->Check(call, s, {"conv", 1}, kNow + 10'000).reason == "nil");
  CHECK(checker->Check(call, s, {"conv", 1}, kNow).reason == "x");  // the clock went back
  CHECK(checker->Check(call, other, {"conv", 2}, kNow).reason == "y");
  CHECK(checker->Check(call, s, {}, kNow).reason == "x");
  CHECK(checker->Check(call, other, {}, kNow).reason == "y");
  // A table value is a fresh copy on every lookup, even within one check.
  LedgerState table = StateOf({{"facts", {{"t", {{"a", 1}}}}}});
  CHECK(Eval("(function() local t = ledger.fact('t'); t.a = 2; return ledger.fact('t').a end)()",
             table) == "1");
}

TEST_CASE("a reused call object shows each call's own id, tool and argument types", "[policy]") {
  auto checker = MakeChecker(
      MakePack("rule { id = 'probe', tools = {'write_*'}, check = function(call, ledger)\n"
               "  return deny(call.id .. ' ' .. call.tool .. ' ' .. "
               "tostring(math.type(call.args.n)) .. ' ' ..\n"
               "              tostring(call.args.n) .. ' ' .. tostring(call.args.m))\nend }\n"));
  auto reason = [&](const ProposedCall& call) {
    return checker->Check(call, LedgerState{}, {}, kNow).reason;
  };
  CHECK(reason({"c1", "write_a", {{"n", 1}}}) == "c1 write_a integer 1 nil");
  CHECK(reason({"c1", "write_a", {{"n", 1}}}) == "c1 write_a integer 1 nil");
  CHECK(reason({"c1", "write_a", {{"n", 1.0}}}) == "c1 write_a float 1.0 nil");
  CHECK(reason({"c2", "write_a", {{"n", 1.0}}}) == "c2 write_a float 1.0 nil");
  CHECK(reason({"c2", "write_b", {{"n", -0.0}, {"m", true}}}) == "c2 write_b float -0.0 true");
  CHECK(reason({"c2", "write_b", {{"n", 0.0}}}) == "c2 write_b float 0.0 nil");
  // Each argument is told from the previous call's by name, type and value,
  // whether the arguments hold only scalars or nested values too.
  CHECK(reason({"c2", "write_b", {{"n", "0.0"}}}) == "c2 write_b nil 0.0 nil");
  CHECK(reason({"c2", "write_b", {{"m", "0.0"}}}) == "c2 write_b nil nil 0.0");
  CHECK(reason({"c2", "write_b", {{"m", false}, {"n", 2}}}) == "c2 write_b integer 2 false");
  CHECK(
      reason({"c2", "write_b", {{"m", {1}}, {"n", 2}}}).starts_with("c2 write_b integer 2 table"));
  CHECK(reason({"c2", "write_b", {{"m", nullptr}, {"n", 2}}}) == "c2 write_b integer 2 nil");
  CHECK(reason({"c2", "write_b", {{"m", true}, {"n", 3}}}) == "c2 write_b integer 3 true");
  CHECK(reason({"c2", "write_b", {{"n", 3u}}}) == "c2 write_b integer 3 nil");
  CHECK(reason({"c2", "write_b", {{"n", -3}}}) == "c2 write_b integer -3 nil");
  // Arguments that are not an object in between leave no field behind.
  CHECK(reason({"c2", "write_b", {{"m", 1}, {"n", 4}}}) == "c2 write_b integer 4 1");
  CHECK(reason({"c2", "write_b", nlohmann::json::array({1, 2})}) == "c2 write_b nil nil nil");
  CHECK(reason({"c2", "write_b", {{"n", 5}}}) == "c2 write_b integer 5 nil");
  CHECK(reason({"c2", "write_b", {{"m", {1}}}}).starts_with("c2 write_b nil nil table"));
  CHECK(reason({"c2", "write_b", {{"n", 6}}}) == "c2 write_b integer 6 nil");
}

TEST_CASE("an argument equal to the previous call's is kept, one that differs is replaced",
          "[policy]") {
  auto checker = MakeChecker(MakePack(
      "rule { id = 'probe', tools = {'write_*'}, check = function(call, ledger)\n"
      "  local a = call.args\n"
      "  return deny(call.tool .. ' ' .. tostring(a.a) .. ' ' .. tostring(a.b) .. ' ' ..\n"
      "              type(a.n) .. ' ' .. tostring(a.n) .. ' ' .. tostring(a.m))\nend }\n"));
  auto reason = [&](const ProposedCall& call) {
    return checker->Check(call, LedgerState{}, {}, kNow).reason;
  };
  // Each call differs from the one before in some argument, so the arguments
  // are refilled field by field: the equal ones stay, the others change.
  CHECK(reason({"c1", "write_a", {{"a", "x"}, {"n", 1}}}) == "write_a x nil number 1 nil");
  CHECK(reason({"c2", "write_b", {{"a", "y"}, {"n", 1}}}) == "write_b y nil number 1 nil");
  CHECK(reason({"c3", "write_a", {{"a", "y"}, {"n", true}}}) == "write_a y nil boolean true nil");
  CHECK(reason({"c4", "write_a", {{"a", "x"}, {"n", "1"}}}) == "write_a x nil string 1 nil");
  CHECK(reason({"c5", "write_a", {{"a", "x"}, {"n", "2"}}}) == "write_a x nil string 2 nil");
  CHECK(reason({"c6", "write_a", {{"b", "x"}, {"n", "2"}}}) == "write_a nil x string 2 nil");
  CHECK(reason({"c7", "write_a", {{"b", "x"}, {"m", "2"}}}) == "write_a nil x nil nil 2");
  CHECK(reason({"c8", "write_b", {{"a", "x"}, {"b", "x"}, {"m", "2"}, {"n", 0}}}) ==
        "write_b x x number 0 2");
  CHECK(reason({"c9", "write_b", {{"b", "x"}, {"m", "2"}, {"n", false}}}) ==
        "write_b nil x boolean false 2");
}

TEST_CASE("arguments under many distinct and long names are each seen", "[policy]") {
  auto checker = MakeChecker(
      MakePack("rule { id = 'probe', tools = {'write_*'}, check = function(call, ledger)\n"
               "  local seen = {}\n"
               "  for k, v in pairs(call.args) do seen[#seen + 1] = k .. '=' .. tostring(v) end\n"
               "  table.sort(seen)\n"
               "  return deny(call.tool .. ' ' .. table.concat(seen, ','))\nend }\n"));
  const std::string long_name(100, 'k');
  // More names than CallView keeps as Lua strings, and names too long to keep.
  for (int i = 0; i < 70; ++i) {
    const std::string name = "name_" + std::to_string(i);
    const std::string tool = "write_" + std::to_string(i % 3);
    const ProposedCall call{"c" + std::to_string(i), tool, {{name, i}, {long_name, i % 2 == 0}}};
    const std::string want = tool + " " + long_name + "=" + (i % 2 == 0 ? "true" : "false") + "," +
                             name + "=" + std::to_string(i);
    CHECK(checker->Check(call, LedgerState{}, {}, kNow).reason == want);
  }
}
