// Keeping data out of the prompt: entries a pack marks internal never render
// in any format (and are not announced as omitted), marked fields of values
// read "[redacted]" while the ledger keeps them, and a malformed "render"
// section is refused with a message naming the member.
#include <catch2/catch.hpp>

#include "taskledger/render/state_block.h"
#include "taskledger/render/visibility.h"

namespace taskledger {
namespace {

Entry Make(nlohmann::json value) {
  Entry e;
  e.value = std::move(value);
  e.provenance.turn = 1;
  e.provenance.source = SourceKind::kToolOutput;
  e.provenance.source_id = "get_reservation#c1";
  e.provenance.verified = true;
  return e;
}

LedgerState Booking() {
  LedgerState s;
  s.version = 2;
  auto& facts = s.of(Category::kFact);
  facts["reservation.R1"] = Make({{"flight", "HAT001"},
                                  {"passengers",
                                   {{{"name", "Ann Lee"}, {"dob", "1990-04-01"}},
                                    {{"name", "Bo Lee"}, {"dob", "2015-09-12"}}}}});
  facts["user.ann.dob"] = Make("1990-04-01");
  facts["user.ann.passport.number"] = Make("X1234567");
  facts["user.ann.name"] = Make("Ann Lee");
  return s;
}

RenderVisibility Parse(const nlohmann::json& spec) {
  auto v = RenderVisibility::FromJson(spec);
  INFO((v ? std::string() : v.error().ToString()));
  REQUIRE(v.has_value());
  return std::move(v).value();
}

const nlohmann::json kSpec = {{"internal", {"user.*.dob", "user.*.passport"}},
                              {"redact", {{"reservation.*", {"/passengers/*/dob"}}}}};

}  // namespace

TEST_CASE("internal entries and redacted fields stay out of every format", "[render][pii]") {
  const RenderVisibility vis = Parse(kSpec);
  const LedgerState s = Booking();
  for (StateBlockFormat f : {StateBlockFormat::kPlain, StateBlockFormat::kMarkdown,
                             StateBlockFormat::kXml, StateBlockFormat::kJson}) {
    for (bool provenance : {false, true}) {
      StateBlockOptions o;
      o.format = f;
      o.include_provenance = provenance;
      o.visibility = &vis;
      Result<StateBlock> b = RenderStateBlock(s, 1000, o);
      REQUIRE(b.has_value());
      INFO(b->text);
      CHECK(b->text.find("1990-04-01") == std::string::npos);
      CHECK(b->text.find("2015-09-12") == std::string::npos);
      CHECK(b->text.find("X1234567") == std::string::npos);
      CHECK(b->text.find("passport") == std::string::npos);
      CHECK(b->text.find("[redacted]") != std::string::npos);
      CHECK(b->text.find("Bo Lee") != std::string::npos);  // the rest of the record stays
      CHECK(b->text.find("Ann Lee") != std::string::npos);
      CHECK(b->text.find("omitted") == std::string::npos);  // hidden is not "omitted"
      CHECK(b->hidden == 2);
      CHECK(b->redacted == 1);
      CHECK(b->total_omitted() == 0);
    }
  }
  // The state itself is untouched: rules and the audit still read the values.
  CHECK(s.of(Category::kFact).at("reservation.R1").value["passengers"][0]["dob"] == "1990-04-01");
  // Without the pack's visibility everything renders, as before.
  Result<StateBlock> all = RenderStateBlock(s, 1000, {});
  REQUIRE(all.has_value());
  CHECK(all->text.find("X1234567") != std::string::npos);
  CHECK(all->hidden == 0);
}

TEST_CASE("key patterns match whole segments and cover the keys below", "[render][pii]") {
  const RenderVisibility vis =
      Parse({{"internal", {"user.*.passport", "audit"}}, {"redact", {{"order.#W1", {""}}}}});
  CHECK(vis.Hides("user.ann.passport"));
  CHECK(vis.Hides("user.ann.passport.number"));
  CHECK(vis.Hides("audit"));
  CHECK(vis.Hides("audit.trail"));
  CHECK_FALSE(vis.Hides("user.ann.passports"));  // a segment is compared whole
  CHECK_FALSE(vis.Hides("user.passport"));       // `*` is exactly one segment
  CHECK_FALSE(vis.Hides("auditor"));
  nlohmann::json v = {{"total", 5}};
  CHECK(vis.Redact("order.#W1", v));
  CHECK(v == "[redacted]");  // "" is the whole value
  nlohmann::json untouched = 7;
  CHECK_FALSE(vis.Redact("order.#W2", untouched));
  CHECK(untouched == 7);
  // Pointers: members by name (~1 is '/'), array elements by index or `*`.
  const RenderVisibility deep = Parse({{"redact", {{"doc", {"/a~1b", "/list/1", "/list/9"}}}}});
  nlohmann::json d = {{"a/b", 1}, {"list", {1, 2, 3}}, {"keep", true}};
  CHECK(deep.Redact("doc", d));
  CHECK(d == nlohmann::json{{"a/b", "[redacted]"}, {"list", {1, "[redacted]", 3}}, {"keep", true}});
}

TEST_CASE("a malformed render section is refused, naming the member", "[render][pii]") {
  auto error = [](const nlohmann::json& spec) {
    auto v = RenderVisibility::FromJson(spec);
    REQUIRE_FALSE(v.has_value());
    return v.error().message();
  };
  CHECK(error(nlohmann::json::array()).find("must be an object") != std::string::npos);
  CHECK(error({{"hidden", {"x"}}}).find("unknown member 'hidden'") != std::string::npos);
  CHECK(error({{"internal", "user.*.dob"}}).find("internal must be an array") != std::string::npos);
  CHECK(error({{"internal", {"user..dob"}}}).find("empty segment") != std::string::npos);
  CHECK(error({{"redact", {{"r.*", {"passengers"}}}}}).find("must start with '/'") !=
        std::string::npos);
  CHECK(error({{"redact", {{"r.*", nlohmann::json::array()}}}}).find("non-empty array") !=
        std::string::npos);
  CHECK(RenderVisibility::FromJson(nullptr).value().empty());
}

}  // namespace taskledger
