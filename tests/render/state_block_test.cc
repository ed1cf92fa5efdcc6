// The state block as an agent's system prompt sees it: the four layouts,
// liveness, deterministic order, provenance, and pruning to a budget.
#include "taskledger/render/state_block.h"

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>

#include "block_reader.h"

namespace taskledger {
namespace {

Entry Make(nlohmann::json value, uint64_t turn = 1, bool verified = true,
           const std::string& source_id = "get_subscription#c1") {
  Entry e;
  e.value = std::move(value);
  e.provenance.turn = turn;
  e.provenance.source = SourceKind::kToolOutput;
  e.provenance.source_id = source_id;
  e.provenance.verified = verified;
  return e;
}

// The example of the original design.
LedgerState DesignState() {
  LedgerState s;
  s.version = 3;
  s.of(Category::kFact)["subscription_status"] = Make("grace_period");
  s.of(Category::kIdentifier)["user_id"] = Make("yusuf_rossi_9620");
  s.of(Category::kConstraint)["grace_period_days"] = Make(5);
  s.of(Category::kCondition)["identity_verified"] = Make(true);
  return s;
}

std::string Render(const LedgerState& s, StateBlockOptions o = {}, int64_t now_ms = 1000) {
  Result<StateBlock> block = RenderStateBlock(s, now_ms, o);
  REQUIRE(block.has_value());
  return block->text;
}

TEST_CASE("plain block has the original design's form", "[render]") {
  CHECK(Render(DesignState()) ==
        "Current Task State:\n"
        "Facts:\n"
        "- subscription_status: grace_period\n"
        "Identifiers:\n"
        "- user_id: yusuf_rossi_9620\n"
        "Constraints:\n"
        "- grace_period_days: 5\n"
        "Conditions:\n"
        "- identity_verified: true");
}

TEST_CASE("markdown, XML and JSON blocks", "[render]") {
  CHECK(Render(DesignState(), {StateBlockFormat::kMarkdown}) ==
        "## Current Task State\n"
        "### Facts\n"
        "- `subscription_status`: grace_period\n"
        "### Identifiers\n"
        "- `user_id`: yusuf_rossi_9620\n"
        "### Constraints\n"
        "- `grace_period_days`: 5\n"
        "### Conditions\n"
        "- `identity_verified`: true");
  CHECK(Render(DesignState(), {StateBlockFormat::kXml}) ==
        "<task_state version=\"3\">\n"
        "<facts>\n<entry key=\"subscription_status\">grace_period</entry>\n</facts>\n"
        "<identifiers>\n<entry key=\"user_id\">yusuf_rossi_9620</entry>\n</identifiers>\n"
        "<constraints>\n<entry key=\"grace_period_days\">5</entry>\n</constraints>\n"
        "<conditions>\n<entry key=\"identity_verified\">true</entry>\n</conditions>\n"
        "</task_state>");
  const std::string json = Render(DesignState(), {StateBlockFormat::kJson});
  CHECK(json ==
        R"({"task_state":{"version":3,"facts":{"subscription_status":"grace_period"},)"
        R"("identifiers":{"user_id":"yusuf_rossi_9620"},"constraints":{"grace_period_days":5},)"
        R"("conditions":{"identity_verified":true}}})");
}

TEST_CASE("values that are not plain words are written as JSON", "[render]") {
  LedgerState s;
  s.of(Category::kFact)["amount"] = Make(12.5);
  s.of(Category::kFact)["looks_numeric"] = Make("5");
  s.of(Category::kFact)["looks_boolean"] = Make("true");
  s.of(Category::kFact)["items"] = Make(nlohmann::json::array({"a", 2, nullptr}));
  s.of(Category::kFact)["address"] = Make(nlohmann::json{{"city", "Zürich"}, {"zip", "8001"}});
  s.of(Category::kFact)["note"] = Make("said \"hi\"");
  s.of(Category::kFact)["city"] = Make("Zürich (Kreis 1)");
  CHECK(Render(s) ==
        "Current Task State:\n"
        "Facts:\n"
        "- address: {\"city\":\"Zürich\",\"zip\":\"8001\"}\n"
        "- amount: 12.5\n"
        "- city: Zürich (Kreis 1)\n"
        "- items: [\"a\",2,null]\n"
        "- looks_boolean: \"true\"\n"
        "- looks_numeric: \"5\"\n"
        "- note: \"said \\\"hi\\\"\"");
}

TEST_CASE("an XML key attribute holds the key itself, escaped, without JSON quote marks",
          "[render]") {
  LedgerState s;
  s.of(Category::kFact)["order.#W7602708.status"] = Make("delivered");
  s.of(Category::kFact)["say \"hi\"\n<now>"] = Make(1);
  CHECK(Render(s, {StateBlockFormat::kXml}) ==
        "<task_state version=\"0\">\n<facts>\n"
        "<entry key=\"order.#W7602708.status\">delivered</entry>\n"
        "<entry key=\"say \\&quot;hi\\&quot;\\n\\u003cnow\\u003e\">1</entry>\n"
        "</facts>\n</task_state>");
}

TEST_CASE("an empty state still renders a well-formed block", "[render]") {
  LedgerState s;
  CHECK(Render(s) == "Current Task State:\n(no entries)");
  CHECK(Render(s, {StateBlockFormat::kXml}) == "<task_state version=\"0\">\n</task_state>");
  CHECK(Render(s, {StateBlockFormat::kJson}) == R"({"task_state":{"version":0}})");
}

TEST_CASE("only entries live at the version and time are rendered", "[render]") {
  LedgerState s = DesignState();
  s.version = 5;
  Entry by_turn = Make("gone");
  by_turn.expires_at_turn = 5;  // not live in versions >= 5
  s.of(Category::kFact)["expired_by_turn"] = by_turn;
  Entry by_time = Make("gone");
  by_time.expires_at_ms = 2000;
  s.of(Category::kFact)["expired_by_time"] = by_time;
  Entry later = Make("still here");
  later.expires_at_turn = 6;
  later.expires_at_ms = 2001;
  s.of(Category::kFact)["live_until_later"] = later;
  const std::string text = Render(s, {}, 2000);
  CHECK(text.find("expired_by") == std::string::npos);
  CHECK(text.find("- live_until_later: still here") != std::string::npos);
  CHECK(Render(s, {}, 1999).find("- expired_by_time: gone") != std::string::npos);
}

TEST_CASE("rendering is deterministic whatever the insertion order", "[render]") {
  LedgerState a, b;
  const std::vector<std::string> keys = {"zeta", "alpha", "Mid", "beta_2", "beta_10"};
  for (const auto& k : keys) a.of(Category::kFact)[k] = Make(k);
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) b.of(Category::kFact)[*it] = Make(*it);
  for (auto format : {StateBlockFormat::kPlain, StateBlockFormat::kMarkdown, StateBlockFormat::kXml,
                      StateBlockFormat::kJson}) {
    for (bool prov : {false, true}) {
      StateBlockOptions o{format, prov, 0};
      CHECK(Render(a, o) == Render(b, o));
      CHECK(Render(a, o) == Render(a, o));
    }
  }
  CHECK(Render(a) ==
        "Current Task State:\nFacts:\n- Mid: Mid\n- alpha: alpha\n- beta_10: beta_10\n"
        "- beta_2: beta_2\n- zeta: zeta");
}

TEST_CASE("provenance says which turn and source produced each entry", "[render]") {
  LedgerState s;
  s.version = 4;
  Entry claimed = Make("grace_period", 2, false, "user");
  claimed.provenance.source = SourceKind::kUserMessage;
  s.of(Category::kFact)["subscription_status"] = claimed;
  Entry verified = Make("yusuf_rossi_9620", 3, true, "get_user#c7");
  verified.provenance.rule_id = "user.id";
  s.of(Category::kIdentifier)["user_id"] = verified;
  CHECK(Render(s, {StateBlockFormat::kPlain, true}) ==
        "Current Task State (version 4):\n"
        "Facts:\n"
        "- subscription_status: grace_period [turn 2, user \"user\", claimed]\n"
        "Identifiers:\n"
        "- user_id: yusuf_rossi_9620 [turn 3, tool \"get_user#c7\", verified, rule \"user.id\"]");
  CHECK(Render(s, {StateBlockFormat::kXml, true})
            .find("<entry key=\"user_id\" turn=\"3\" source=\"tool\" source_id=\"get_user#c7\" "
                  "verified=\"true\" rule=\"user.id\">yusuf_rossi_9620</entry>") !=
        std::string::npos);
  const auto json = nlohmann::json::parse(Render(s, {StateBlockFormat::kJson, true}));
  CHECK(json["task_state"]["identifiers"]["user_id"] ==
        nlohmann::json{{"value", "yusuf_rossi_9620"},
                       {"turn", 3},
                       {"source", "tool"},
                       {"source_id", "get_user#c7"},
                       {"verified", true},
                       {"rule", "user.id"}});
  for (auto format : {StateBlockFormat::kPlain, StateBlockFormat::kMarkdown, StateBlockFormat::kXml,
                      StateBlockFormat::kJson}) {
    auto read = testing::ReadStateBlock(format, Render(s, {format, true}), true);
    CHECK(read.error.empty());
    CHECK(read.entries.size() == 2);
  }
}

// The design state plus 20 facts from turns 1..20 and a long identifier.
LedgerState BigState() {
  LedgerState s = DesignState();
  s.version = 20;
  for (int t = 1; t <= 20; ++t) {
    char key[16];
    std::snprintf(key, sizeof key, "fact_%02d", t);
    s.of(Category::kFact)[key] = Make("observed value number " + std::to_string(t), t);
  }
  s.of(Category::kIdentifier)["order_id"] = Make("ord_" + std::string(60, 'x'));
  return s;
}

TEST_CASE("a budget drops the oldest facts first and says so", "[render]") {
  const LedgerState s = BigState();
  Result<StateBlock> full = RenderStateBlock(s, 0, {});
  REQUIRE(full.has_value());
  CHECK(full->total_omitted() == 0);
  CHECK(full->approx_tokens == (full->chars + 3) / 4);

  StateBlockOptions o;
  o.max_chars = full->chars - 200;
  Result<StateBlock> cut = RenderStateBlock(s, 0, o);
  REQUIRE(cut.has_value());
  CHECK(cut->chars <= o.max_chars);
  CHECK(cut->chars == cut->text.size());  // ASCII only here
  const size_t n = cut->omitted[0];
  CHECK(n > 0);
  CHECK(cut->total_omitted() == n);  // identifiers, constraints, conditions kept
  CHECK(cut->text.find("Facts:\n(" + std::to_string(n) + " older facts omitted)\n") !=
        std::string::npos);
  // Exactly the n oldest are gone: turns 1..n, and subscription_status (turn 1).
  for (int t = 1; t <= 20; ++t) {
    char key[16];
    std::snprintf(key, sizeof key, "fact_%02d", t);
    const bool present = cut->text.find(key) != std::string::npos;
    CHECK(present == (t >= static_cast<int>(n)));  // n-1 old facts plus subscription_status
  }
  CHECK(cut->text.find("subscription_status") == std::string::npos);
  CHECK(cut->text.find("- user_id: yusuf_rossi_9620") != std::string::npos);
  // The fewest were dropped: one entry fewer would not fit.
  const size_t kept_fact_chars = std::string("- fact_01: observed value number 1").size() + 1;
  CHECK(cut->chars + kept_fact_chars > o.max_chars);
}

TEST_CASE("a tight budget drops all facts before the first identifier", "[render]") {
  const LedgerState s = BigState();
  const std::string expected =
      "Current Task State:\n"
      "Facts:\n"
      "(21 older facts omitted)\n"
      "Identifiers:\n"
      "(1 older identifier omitted)\n"
      "- user_id: yusuf_rossi_9620\n"
      "Constraints:\n"
      "- grace_period_days: 5\n"
      "Conditions:\n"
      "- identity_verified: true";
  StateBlockOptions o;
  o.max_chars = expected.size();
  Result<StateBlock> cut = RenderStateBlock(s, 0, o);
  REQUIRE(cut.has_value());
  CHECK(cut->text == expected);
  CHECK(cut->omitted == std::array<size_t, kCategoryCount>{21, 1, 0, 0});
  for (auto format :
       {StateBlockFormat::kMarkdown, StateBlockFormat::kXml, StateBlockFormat::kJson}) {
    o.format = format;
    o.max_chars = 0;
    Result<StateBlock> full = RenderStateBlock(s, 0, o);
    REQUIRE(full.has_value());
    o.max_chars = full->chars / 2;
    Result<StateBlock> b = RenderStateBlock(s, 0, o);
    REQUIRE(b.has_value());
    CHECK(b->chars <= o.max_chars);
    CHECK(b->omitted[0] > 0);
    CHECK(b->omitted[3] == 0);
    auto read = testing::ReadStateBlock(format, b->text, false);
    CHECK(read.error.empty());
    CHECK(read.omitted["facts"] == b->omitted[0]);
    CHECK(read.entries.size() + b->total_omitted() == 25);
  }
}

TEST_CASE("claims are dropped before verified evidence of the same turn", "[render]") {
  LedgerState s;
  s.of(Category::kFact)["a_verified"] = Make("from a tool", 1, true);
  s.of(Category::kFact)["b_claimed"] = Make("from the user", 1, false);
  StateBlockOptions o;
  o.max_chars = Render(s).size() - 1;
  const std::string text = Render(s, o);
  CHECK(text.find("a_verified") != std::string::npos);
  CHECK(text.find("b_claimed") == std::string::npos);
}

TEST_CASE("a budget too small for the skeleton is an error, not a broken block", "[render]") {
  StateBlockOptions o;
  o.max_chars = 10;
  Result<StateBlock> r = RenderStateBlock(BigState(), 0, o);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().code() == StatusCode::kLimitExceeded);
}

TEST_CASE("the budget counts characters, not bytes", "[render]") {
  LedgerState s;
  s.of(Category::kFact)["city"] = Make("Zürich Straße 日本");
  Result<StateBlock> b = RenderStateBlock(s, 0, {});
  REQUIRE(b.has_value());
  CHECK(b->text.size() > b->chars);
  StateBlockOptions o;
  o.max_chars = b->chars;  // fits exactly though the byte length is larger
  Result<StateBlock> exact = RenderStateBlock(s, 0, o);
  REQUIRE(exact.has_value());
  CHECK(exact->total_omitted() == 0);
}

}  // namespace
}  // namespace taskledger
