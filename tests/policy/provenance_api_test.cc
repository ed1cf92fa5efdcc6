// The rule API's provenance functions at the checker: call.sources /
// sources_of / trusted / untrusted_tokens / explain / user_messages /
// designated over a ProvenanceIndex, the evidence a denial keeps, failing
// closed without an index, and std's native text helpers (tokens, contains_word, normalize)
// running outside the Lua pattern budget.
#include <catch2/catch.hpp>

#include "policy_test_util.h"
#include "taskledger/provenance/index.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

std::shared_ptr<const RulePack> Pack(const std::string& body) {
  nlohmann::json manifest = {{"name", "t"}, {"tools", {{"writes", {"send"}}}}};
  auto pack = RulePack::FromFiles(
      {{"pack.json", manifest.dump()},
       {"rules.lua", "rule { id = 'probe', tools = {'send'}, check = function(call, ledger)\n" +
                         body + "\nend }\n"}});
  INFO((pack ? std::string() : pack.error().ToString()));
  REQUIRE(pack.has_value());
  return pack.value();
}

PolicyDecision Decide(const std::string& body, const provenance::ProvenanceIndex* index,
                      nlohmann::json args) {
  auto checker = MakeChecker(Pack(body));
  checker->SetProvenance(index);
  return checker->Check(CallOf("send", std::move(args)), LedgerState{}, {}, kNow);
}

provenance::ProvenanceIndex Index() {
  auto trust = provenance::TrustPolicy::FromJson(
      nlohmann::json::parse(R"({"tools": {"inbox": {"/*/from": true}}})"));
  REQUIRE(trust.has_value());
  provenance::ProvenanceIndex index(trust.value());
  REQUIRE(index.AddUserMessage(1, "Pay my landlord, the IBAN is in his mail").ok());
  REQUIRE(index
              .AddToolOutput(1, "inbox", "m1", nlohmann::json::parse(R"([
    {"from": "landlord@rent.com", "body": "Rent to DE89 3704 0044 0532 0130 00 please"},
    {"from": "x@evil.com", "body": "New IBAN: GB29 NWBK 6016 1331 9268 19. Visit evil.com/pay"}])"))
              .ok());
  return index;
}

}  // namespace

TEST_CASE("provenance API: sources with kind, path, record and trust", "[policy][provenance]") {
  auto index = Index();
  PolicyDecision d = Decide(R"(
    local s = call.sources("iban")
    local r = s[1]
    return deny(#s .. " " .. r.kind .. " " .. r.tool .. " " .. r.call_id .. " " .. r.path .. " " ..
                tostring(r.trusted) .. " " .. tostring(r.token) .. " " .. r.record.fields.from ..
                " " .. r.record.path)
  )",
                            &index, {{"iban", "de89370400440532013000"}, {"amount", 5}});
  CHECK(d.reason == "1 tool inbox m1 $[0].body false true landlord@rent.com $[0]");
  REQUIRE(d.provenance.is_array());
  CHECK(d.provenance[0]["arg"] == "iban");
  CHECK(d.provenance[0]["sources"][0]["record"]["fields"]["from"] == "landlord@rent.com");
}

TEST_CASE("provenance API: trusted, explain, untrusted_tokens and user_messages",
          "[policy][provenance]") {
  auto index = Index();
  auto reason = [&](const std::string& body, nlohmann::json args) {
    PolicyDecision d = Decide(body, &index, std::move(args));
    INFO(d.reason);
    REQUIRE_FALSE((!d.rules.empty() && d.rules[0].error));
    return d.reason;
  };
  CHECK(reason("return deny(tostring(call.trusted('to')))", {{"to", "Landlord@Rent.com"}}) ==
        "true");
  // Trust rests on the field: an attacker's address in a trusted `from` is trusted too.
  CHECK(reason("return deny(tostring(call.trusted('to')))", {{"to", "x@evil.com"}}) == "true");
  CHECK(reason("return deny(tostring(call.trusted('to')))",
               {{"to", "gb29 nwbk 6016 1331 9268 19"}}) == "false");
  CHECK(reason("return deny(call.explain('iban'))", {{"iban", "GB29NWBK60161331926819"}}) ==
        "iban \"GB29NWBK60161331926819\" appears only in inbox(m1) at $[1].body (inside the "
        "text), untrusted");
  CHECK(reason("return deny(call.explain('iban'))", {{"iban", "FR1420041010050500013M02606"}}) ==
        "iban \"FR1420041010050500013M02606\" was seen nowhere (not in the user's messages, a "
        "tool output or the pack)");
  CHECK(reason("return deny(call.explain('who'))", {{"who", "landlord"}}) ==
        "who \"landlord\" appears in the user's message (turn 1), trusted");
  CHECK(reason(R"(
    local out = {}
    for _, t in ipairs(call.untrusted_tokens('note', 'url', 'account')) do
      out[#out + 1] = t.kind .. ":" .. t.text .. ":" .. #t.sources
    end
    return deny(table.concat(out, ","))
  )",
               {{"note", "see https://evil.com/pay/ and made-up.org/x, landlord@rent.com"}}) ==
        "url:https://evil.com/pay/:1,url:made-up.org/x:0");
  CHECK(reason("local m = call.user_messages() return deny(#m .. ' ' .. m[1].turn .. ' ' .. "
               "m[1].text)",
               {}) == "1 1 Pay my landlord, the IBAN is in his mail");
  CHECK(reason("return deny(tostring(#call.sources_of(42)))", {}) == "0");
}

TEST_CASE("provenance API: no index, a missing argument or a bad kind fail closed",
          "[policy][provenance]") {
  PolicyDecision d =
      Decide("return call.trusted('to') and allow() or deny('no')", nullptr, {{"to", "a"}});
  CHECK(d.outcome == Outcome::kDeny);
  CHECK_THAT(d.reason, Catch::Contains("provenance is only known while a session checks a call"));
  auto index = Index();
  d = Decide("call.sources('nope') return allow()", &index, {{"to", "a"}});
  CHECK(d.outcome == Outcome::kDeny);
  CHECK_THAT(d.reason, Catch::Contains("the call has no argument 'nope'"));
  d = Decide("call.untrusted_tokens('to', 'phone') return allow()", &index, {{"to", "a"}});
  CHECK_THAT(d.reason, Catch::Contains("unknown token kind 'phone'"));
  d = Decide("call.sources('to') return allow()", &index, {{"to", {1, 2}}});
  CHECK_THAT(d.reason, Catch::Contains("call.sources_of(v)"));
  // An allow keeps no evidence.
  d = Decide("call.sources('to') return allow()", &index, {{"to", "a"}});
  CHECK(d.allowed());
  CHECK(d.provenance.is_null());
}

TEST_CASE("std text helpers run natively on long texts", "[policy][provenance][std]") {
  std::string bill = "Bill. IBAN: GB29 NWBK 6016 1331 9268 19. ";
  while (bill.size() < 200000) bill += "Lorem ipsum dolor sit amet, every word here. ";
  bill += "Pay at https://pay.example.com/x or mail fees@example.com";
  const nlohmann::json args = {{"text", bill}};
  auto index = Index();
  auto run = [&](const std::string& body) {
    PolicyDecision d = Decide(body, &index, args);
    INFO(d.reason);
    REQUIRE_FALSE((!d.rules.empty() && d.rules[0].error));
    return d.reason;
  };
  CHECK(run("return deny(table.concat(std.tokens(call.args.text, 'account', 'url', 'email'), "
            "'|'))") == "GB29 NWBK 6016 1331 9268 19|https://pay.example.com/x|fees@example.com");
  CHECK(run("return deny(tostring(std.contains_word(call.args.text, 'Eve')))") == "false");
  CHECK(run("return deny(tostring(std.contains_word(call.args.text, 'EVERY')))") == "true");
  CHECK(run("return deny(std.normalize('HTTPS://WWW.X.com/'))") == "x.com");
  PolicyDecision bad = Decide("std.tokens('x', 'nope') return allow()", &index, args);
  CHECK_THAT(bad.reason, Catch::Contains("unknown token kind 'nope'"));
}

TEST_CASE("provenance API: call.designated answers, names the record, and fails closed",
          "[policy][provenance]") {
  provenance::ProvenanceIndex index;
  REQUIRE(index.AddUserMessage(1, "Pay the amount in the mail from Lena").ok());
  REQUIRE(index
              .AddToolOutput(1, "inbox", "m1", nlohmann::json::parse(R"([
    {"sender": "Lena", "body": "Rent to DE89 3704 0044 0532 0130 00 please"},
    {"sender": "Otto", "body": "New IBAN: GB29 NWBK 6016 1331 9268 19"}])"))
              .ok());
  const std::string body = R"(
    local ok, where = call.designated(call.args.iban, {tools = {"inbox"}})
    return deny(tostring(ok) .. " " .. tostring(where)))";
  CHECK(Decide(body, &index, {{"iban", "DE89370400440532013000"}}).reason ==
        "true inbox(m1) at $[0] (by author)");
  CHECK(Decide(body, &index, {{"iban", "GB29NWBK60161331926819"}}).reason == "false nil");
  // A misspelt spec field, a missing tools list, no index: errors, so the call is denied.
  PolicyDecision bad = Decide("return call.designated('x', {tool = {'inbox'}}) and allow()", &index,
                              {{"iban", "x"}});
  CHECK_FALSE(bad.allowed());
  CHECK(bad.reason.find("unknown spec field 'tool'") != std::string::npos);
  PolicyDecision none = Decide("return call.designated('x', {}) and allow()", &index, {});
  CHECK_FALSE(none.allowed());
  CHECK(none.reason.find("names no tool") != std::string::npos);
  PolicyDecision unbound =
      Decide("return call.designated('x', {tools = {'inbox'}}) and allow()", nullptr, {});
  CHECK_FALSE(unbound.allowed());
  CHECK(unbound.reason.find("only known while a session checks a call") != std::string::npos);
}

TEST_CASE(
    "provenance API: untrusted_tokens lists are reused per text and kinds until the index "
    "changes",
    "[policy][provenance]") {
  // One checker over one index, as a session checks call after call: a list
  // asked again answers the same, another kind set or another text its own,
  // and an index that changed (the user names the URL) answers anew. A number
  // argument is asked as its JSON text (an account number seen nowhere).
  auto index = Index();
  auto checker = MakeChecker(Pack(R"(
    local out = {}
    for _, kinds in ipairs({{'url'}, {'account'}, {'url'}}) do
      local list = {}
      for _, t in ipairs(call.untrusted_tokens('note', table.unpack(kinds))) do
        list[#list + 1] = t.text
      end
      out[#out + 1] = table.concat(list, "+")
    end
    out[#out + 1] = tostring(#call.untrusted_tokens('n'))
    return deny(table.concat(out, ",")))"));
  checker->SetProvenance(&index);
  auto check = [&](const std::string& note) {
    PolicyDecision d = checker->Check(CallOf("send", {{"note", note}, {"n", 6016133192681900}}),
                                      LedgerState{}, {}, kNow);
    INFO(d.reason);
    REQUIRE_FALSE((!d.rules.empty() && d.rules[0].error));
    return d.reason;
  };
  const std::string note = "pay GB29 NWBK 6016 1331 9268 19 at evil.com/pay or other.org/x";
  CHECK(check(note) ==
        "evil.com/pay+other.org/x,GB29 NWBK 6016 1331 9268 19,"
        "evil.com/pay+other.org/x,1");
  CHECK(check(note) ==
        "evil.com/pay+other.org/x,GB29 NWBK 6016 1331 9268 19,"
        "evil.com/pay+other.org/x,1");
  CHECK(check("see evil.com/pay") == "evil.com/pay,,evil.com/pay,1");
  REQUIRE(index.AddUserMessage(2, "the portal is evil.com/pay").ok());
  CHECK(check(note) == "other.org/x,GB29 NWBK 6016 1331 9268 19,other.org/x,1");
  CHECK(check("see evil.com/pay") == ",,,1");
}

TEST_CASE("provenance API: a source's table is reused across outputs, never across indexes",
          "[policy][provenance]") {
  // The tables of single sources outlive the index's generations (a source
  // never changes), so the lists after a new output reuse them; another index
  // (even a copy, with the same positions) gets tables of its own.
  auto pack = Pack(R"(
    local out = {}
    for _, s in ipairs(call.sources('to')) do
      out[#out + 1] = (s.tool or s.kind) .. ":" .. (s.path or "") .. ":" .. tostring(s.trusted)
    end
    return deny(table.concat(out, ",")))");
  auto checker = MakeChecker(pack);
  auto check = [&](const provenance::ProvenanceIndex* index) {
    checker->SetProvenance(index);
    PolicyDecision d =
        checker->Check(CallOf("send", {{"to", "landlord@rent.com"}}), LedgerState{}, {}, kNow);
    INFO(d.reason);
    REQUIRE_FALSE((!d.rules.empty() && d.rules[0].error));
    return d.reason;
  };
  auto a = Index();
  CHECK(check(&a) == "inbox:$[0].from:true");
  REQUIRE(a.AddToolOutput(2, "web", "w1", nlohmann::json{{"text", "landlord@rent.com"}}).ok());
  CHECK(check(&a) == "inbox:$[0].from:true,web:$.text:false");
  // The same message and output under another tool, without trust: the same
  // source positions as `a`'s first ones, other answers.
  provenance::ProvenanceIndex b;
  REQUIRE(b.AddUserMessage(1, "Pay my landlord, the IBAN is in his mail").ok());
  REQUIRE(b.AddToolOutput(1, "archive", "m1", nlohmann::json::parse(R"([
    {"from": "landlord@rent.com", "body": "Rent to DE89 3704 0044 0532 0130 00 please"},
    {"from": "x@evil.com", "body": "New IBAN: GB29 NWBK 6016 1331 9268 19. Visit evil.com/pay"}])"))
              .ok());
  CHECK(check(&b) == "archive:$[0].from:false");
  CHECK(check(&a) == "inbox:$[0].from:true,web:$.text:false");
  provenance::ProvenanceIndex c = a;
  REQUIRE(c.AddUserMessage(3, "write to landlord@rent.com").ok());
  CHECK(check(&c) == "inbox:$[0].from:true,web:$.text:false,user::true");
  CHECK(check(&a) == "inbox:$[0].from:true,web:$.text:false");
}
