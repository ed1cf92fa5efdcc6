// Ids in key templates: what a placeholder substitutes is escaped as one key
// segment (taskledger/base/key_segment.h), so ids holding `.`, `{`, `}`, `*`
// or `%` cannot be read as key structure, while every other id (spaces and
// unicode included) gives the same key as before escaping existed.
#include "extract_test_util.h"
#include "taskledger/base/key_segment.h"

namespace taskledger {
namespace {

using extract_test::Call;
using extract_test::Find;
using extract_test::Rules;
using nlohmann::json;

json Mapping(const std::string& key) {
  return {{"tools",
           {{"get_order_details", json::array({{{"id", "order.status"},
                                                {"path", "/status"},
                                                {"category", "fact"},
                                                {"key", key}}})}}}};
}

std::string KeyFor(const std::string& key_template, const json& output, const json& args = {}) {
  Extractor ex(Rules(Mapping(key_template)));
  Extraction e = ex.ExtractToolOutput(
      Call("get_order_details", "c1", args.is_null() ? json::object() : args), output.dump());
  REQUIRE(e.errors.empty());
  REQUIRE(e.updates.size() == 1);
  return e.updates[0].key;
}

TEST_CASE("ids without special bytes give the same keys as 0.1", "[extract][escape]") {
  for (std::string id : {"#W1234567", "mia_li_3668", "credit card 1", "café-ünïcødé", "a/b:c"}) {
    CHECK(KeyFor("order.{order_id}.status", {{"order_id", id}, {"status", "pending"}}) ==
          "order." + id + ".status");
  }
  CHECK(KeyFor("order.{n}.status", {{"n", 42}, {"status", "x"}}) == "order.42.status");
}

TEST_CASE("ids with separators and placeholder bytes stay one segment", "[extract][escape]") {
  json out = {{"order_id", "#W1.2 {x}*%"}, {"status", "pending"}};
  CHECK(KeyFor("order.{order_id}.status", out) == "order.#W1%2E2 %7Bx%7D%2A%25.status");
  // Every kind of placeholder escapes: pointer, argument, capture.
  CHECK(KeyFor("order.{/order_id}.status", out) == "order.#W1%2E2 %7Bx%7D%2A%25.status");
  CHECK(KeyFor("order.{@id}.status", out, {{"id", "a.b"}}) == "order.a%2Eb.status");
  // A number with a fraction is one segment too.
  CHECK(KeyFor("order.{n}.status", {{"n", 1.5}, {"status", "x"}}) == "order.1%2E5.status");
  // Literal text of the template is not escaped.
  CHECK(KeyFor("a.b.{order_id}", out) == "a.b.#W1%2E2 %7Bx%7D%2A%25");
}

TEST_CASE("wildcard captures of member names are escaped", "[extract][escape]") {
  json spec = {
      {"tools",
       {{"get_user_details", json::array({{{"id", "pm"},
                                           {"path", "/payment_methods/*/source"},
                                           {"category", "fact"},
                                           {"key", "user.{@user_id}.payment.{$1}.source"}}})}}}};
  Extractor ex(Rules(spec));
  json out = {{"payment_methods", {{"gift.card*1", {{"source", "gift_card"}}}}}};
  Extraction e =
      ex.ExtractToolOutput(Call("get_user_details", "c1", {{"user_id", "ü.1"}}), out.dump());
  REQUIRE(e.errors.empty());
  REQUIRE(Find(e, Category::kFact, "user.ü%2E1.payment.gift%2Ecard%2A1.source") != nullptr);
}

TEST_CASE("escaping round-trips every byte and reads legacy percent text", "[extract][escape]") {
  std::string all;
  for (int b = 1; b < 256; ++b) all += static_cast<char>(b);
  std::string esc = EscapeKeySegment(all);
  CHECK(esc.find('.') == std::string::npos);
  CHECK(esc.find('{') == std::string::npos);
  CHECK(esc.find('}') == std::string::npos);
  CHECK(esc.find('*') == std::string::npos);
  CHECK(UnescapeKeySegment(esc) == all);
  // A '%' that starts no escape (a key written before escaping) reads as itself.
  CHECK(UnescapeKeySegment("50%off") == "50%off");
  CHECK(UnescapeKeySegment("100%") == "100%");
  CHECK(UnescapeKeySegment("a%2eb") == "a.b");
}

}  // namespace
}  // namespace taskledger
