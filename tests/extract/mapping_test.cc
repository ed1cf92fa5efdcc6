// Declarative JSON mappings of extract.json: wildcard paths over arrays and
// objects, key templates, value specs, coercion, expiry and provenance.
#include "extract_test_util.h"
#include "taskledger/base/clock.h"

namespace taskledger {
namespace {

using extract_test::Call;
using extract_test::Find;
using extract_test::Rules;
using nlohmann::json;

const char* kOrder = R"({
  "order_id": "#W1234567", "user_id": "yusuf_rossi_9620", "status": "pending",
  "items": [
    {"item_id": "111", "product_id": "p1", "price": "10.5"},
    {"item_id": "222", "product_id": "p2", "price": 20}
  ],
  "payment_history": [{"payment_method_id": "credit_card_1", "amount": 30.5}],
  "payment_methods": {
    "gift_card_9": {"source": "gift_card", "balance": 12},
    "paypal_3": {"source": "paypal"}
  }
})";

json OrderRules(json mappings) { return {{"tools", {{"get_order_details", std::move(mappings)}}}}; }

TEST_CASE("a plain path maps one field with full provenance", "[extract][mapping]") {
  Extractor ex(Rules(OrderRules(json::array({{{"id", "order.status"},
                                              {"path", "/status"},
                                              {"category", "fact"},
                                              {"key", "order.{order_id}.status"}}}))));
  Extraction e = ex.ExtractToolOutput(Call("get_order_details", "c7"), kOrder);
  REQUIRE(e.errors.empty());
  REQUIRE(e.updates.size() == 1);
  const Update& u = e.updates[0];
  CHECK(u.op == UpdateOp::kSet);
  CHECK(u.category == Category::kFact);
  CHECK(u.key == "order.#W1234567.status");
  CHECK(u.value == "pending");
  CHECK(u.provenance.turn == 0);  // the Ledger fills it in when staging
  CHECK(u.provenance.source == SourceKind::kToolOutput);
  CHECK(u.provenance.source_id == "get_order_details#c7");
  CHECK(u.provenance.verified);
  CHECK(u.provenance.rule_id == "order.status");
  CHECK(u.provenance.pack_version == extract_test::kPackVersion);
  CHECK_FALSE(u.expire_after_turns);
  CHECK_FALSE(u.expire_at_ms);
}

TEST_CASE("a wildcard over an array yields one update per element", "[extract][mapping]") {
  Extractor ex(
      Rules(OrderRules(json::array({{{"id", "order.item_product"},
                                     {"path", "/items/*/product_id"},
                                     {"category", "fact"},
                                     {"key", "order.{/order_id}.item.{item_id}.product_id"}},
                                    {{"id", "order.item_index"},
                                     {"path", "/items/*/item_id"},
                                     {"category", "fact"},
                                     {"key", "order.{/order_id}.line.{$1}"}}}))));
  Extraction e = ex.ExtractToolOutput(Call("get_order_details"), kOrder);
  REQUIRE(e.errors.empty());
  REQUIRE(e.updates.size() == 4);
  CHECK(e.updates[0].key == "order.#W1234567.item.111.product_id");
  CHECK(e.updates[0].value == "p1");
  CHECK(e.updates[1].key == "order.#W1234567.item.222.product_id");
  CHECK(e.updates[1].value == "p2");
  // {$1} of an array wildcard is the element index.
  CHECK(e.updates[2].key == "order.#W1234567.line.0");
  CHECK(e.updates[2].value == "111");
  CHECK(e.updates[3].key == "order.#W1234567.line.1");
}

TEST_CASE("a wildcard over an object captures member names", "[extract][mapping]") {
  Extractor ex(Rules({{"tools",
                       {{"get_user_details",
                         {{{"id", "user.payment_source"},
                           {"path", "/payment_methods/*/source"},
                           {"category", "fact"},
                           {"key", "user.{@user_id}.payment.{$1}.source"}}}}}}}));
  Extraction e = ex.ExtractToolOutput(
      Call("get_user_details", "c1", {{"user_id", "yusuf_rossi_9620"}}), kOrder);
  REQUIRE(e.errors.empty());
  REQUIRE(e.updates.size() == 2);
  CHECK(e.updates[0].key == "user.yusuf_rossi_9620.payment.gift_card_9.source");
  CHECK(e.updates[0].value == "gift_card");
  CHECK(e.updates[1].key == "user.yusuf_rossi_9620.payment.paypal_3.source");
  CHECK(e.updates[1].value == "paypal");
}

TEST_CASE("two wildcards capture in order", "[extract][mapping]") {
  Extractor ex(Rules({{"tools",
                       {{"t",
                         {{{"id", "grid"},
                           {"path", "/*/*"},
                           {"category", "fact"},
                           {"key", "cell.{$1}.{$2}"}}}}}}}));
  Extraction e = ex.ExtractToolOutput(Call("t"), R"({"a": [1, 2], "b": {"x": true}})");
  REQUIRE(e.updates.size() == 3);
  CHECK(e.updates[0].key == "cell.a.0");
  CHECK(e.updates[0].value == 1);
  CHECK(e.updates[1].key == "cell.a.1");
  CHECK(e.updates[2].key == "cell.b.x");
  CHECK(e.updates[2].value == true);
}

TEST_CASE("a placeholder that does not resolve skips only that match", "[extract][mapping]") {
  // Only the first item has a "note": the second match is skipped, silently.
  Extractor ex(Rules({{"tools",
                       {{"t",
                         {{{"id", "note"},
                           {"path", "/items/*/item_id"},
                           {"category", "fact"},
                           {"key", "item.{item_id}.note.{note}"}}}}}}}));
  Extraction e = ex.ExtractToolOutput(
      Call("t"), R"({"items": [{"item_id": "1", "note": "a"}, {"item_id": "2"}]})");
  CHECK(e.errors.empty());
  REQUIRE(e.updates.size() == 1);
  CHECK(e.updates[0].key == "item.1.note.a");
}

TEST_CASE("a required mapping that cannot resolve is an error and keeps nothing",
          "[extract][mapping]") {
  Extractor ex(Rules({{"tools",
                       {{"t",
                         {{{"id", "note"},
                           {"path", "/items/*/item_id"},
                           {"category", "fact"},
                           {"key", "item.{item_id}.note.{note}"},
                           {"required", true}},
                          {{"id", "other"},
                           {"path", "/items/0/item_id"},
                           {"category", "fact"},
                           {"key", "first_item"}}}}}}}));
  Extraction e = ex.ExtractToolOutput(
      Call("t"), R"({"items": [{"item_id": "1", "note": "a"}, {"item_id": "2"}]})");
  REQUIRE(e.errors.size() == 1);
  CHECK(e.errors[0].rule == "note");
  CHECK(e.errors[0].code == "unresolved");
  CHECK(e.errors[0].tool == "t");
  CHECK(e.errors[0].call_id == "c1");
  CHECK(e.errors[0].message.value_or("").find("/items/1/item_id") != std::string::npos);
  // The failing mapping lost even its good first match; the other mapping applies.
  REQUIRE(e.updates.size() == 1);
  CHECK(e.updates[0].key == "first_item");

  Extraction none = ex.ExtractToolOutput(Call("t"), R"({"other": 1})");
  REQUIRE(none.errors.size() == 1);
  CHECK(none.errors[0].code == "missing");
}

TEST_CASE("value specs: literal, template, relative and absolute pointers", "[extract][mapping]") {
  Extractor ex(
      Rules(OrderRules(json::array({{{"id", "paid"},
                                     {"path", "/payment_history/*/payment_method_id"},
                                     {"category", "fact"},
                                     {"key", "order.{/order_id}.paid_with.{payment_method_id}"},
                                     {"value", true}},
                                    {{"id", "label"},
                                     {"path", "/items/*"},
                                     {"category", "fact"},
                                     {"key", "item.{item_id}.label"},
                                     {"value", "{product_id} of {/order_id}"}},
                                    {{"id", "rel"},
                                     {"path", "/items/*"},
                                     {"category", "fact"},
                                     {"key", "item.{item_id}.price_raw"},
                                     {"value", "{./price}"}},
                                    {{"id", "whole"},
                                     {"path", "/items/0"},
                                     {"category", "fact"},
                                     {"key", "first_item"},
                                     {"value", "{.}"}},
                                    {{"id", "abs"},
                                     {"path", "/status"},
                                     {"category", "fact"},
                                     {"key", "history"},
                                     {"value", "{/payment_history}"}}}))));
  Extraction e = ex.ExtractToolOutput(Call("get_order_details"), kOrder);
  REQUIRE(e.errors.empty());
  CHECK(Find(e, Category::kFact, "order.#W1234567.paid_with.credit_card_1")->value == true);
  CHECK(Find(e, Category::kFact, "item.111.label")->value == "p1 of #W1234567");
  // A single pointer placeholder yields the JSON node itself, not a string.
  CHECK(Find(e, Category::kFact, "item.111.price_raw")->value == "10.5");
  CHECK(Find(e, Category::kFact, "item.222.price_raw")->value == 20);
  CHECK(Find(e, Category::kFact, "first_item")->value["product_id"] == "p1");
  CHECK(Find(e, Category::kFact, "history")->value.is_array());
}

TEST_CASE("coercion converts or fails the mapping", "[extract][mapping]") {
  auto mapping = [](const char* id, const char* path, const char* coerce) {
    return json{{"id", id}, {"path", path}, {"category", "fact"}, {"key", id}, {"coerce", coerce}};
  };
  Extractor ex(Rules(
      {{"tools",
        {{"t",
          {mapping("num_from_string", "/s_num", "number"),
           mapping("int_from_float", "/f_int", "integer"),
           mapping("int_from_string", "/s_int", "integer"), mapping("str_from_num", "/i", "string"),
           mapping("bool_from_string", "/s_bool", "boolean"),
           mapping("bool_from_num", "/one", "boolean"),
           mapping("null_skipped", "/nothing", "integer"), mapping("bad_int", "/f_frac", "integer"),
           mapping("bad_bool", "/word", "boolean")}}}}}));
  Extraction e = ex.ExtractToolOutput(Call("t"), R"({"s_num": "10.5", "f_int": 5.0, "s_int": "42",
      "i": 7, "s_bool": "true", "one": 1, "nothing": null, "f_frac": 2.5, "word": "maybe"})");
  CHECK(Find(e, Category::kFact, "num_from_string")->value == 10.5);
  const Update* i = Find(e, Category::kFact, "int_from_float");
  CHECK(i->value.is_number_integer());
  CHECK(i->value == 5);
  CHECK(Find(e, Category::kFact, "int_from_string")->value == 42);
  CHECK(Find(e, Category::kFact, "str_from_num")->value == "7");
  CHECK(Find(e, Category::kFact, "bool_from_string")->value == true);
  CHECK(Find(e, Category::kFact, "bool_from_num")->value == true);
  CHECK(Find(e, Category::kFact, "null_skipped") == nullptr);
  CHECK(Find(e, Category::kFact, "bad_int") == nullptr);
  CHECK(Find(e, Category::kFact, "bad_bool") == nullptr);
  REQUIRE(e.errors.size() == 2);
  CHECK(e.errors[0].rule == "bad_int");
  CHECK(e.errors[0].code == "coercion_failed");
  CHECK(e.errors[1].rule == "bad_bool");
}

TEST_CASE("expiry in turns, seconds and seconds read from a field", "[extract][mapping]") {
  ManualClock clock(1'000'000);
  auto rules = Rules({{"tools",
                       {{"t",
                         {{{"id", "turns"},
                           {"path", "/a"},
                           {"category", "constraint"},
                           {"key", "a"},
                           {"expire", {{"turns", 3}}}},
                          {{"id", "secs"},
                           {"path", "/a"},
                           {"category", "constraint"},
                           {"key", "b"},
                           {"expire", {{"seconds", 90}}}},
                          {{"id", "days"},
                           {"path", "/days_remaining"},
                           {"category", "constraint"},
                           {"key", "grace"},
                           {"expire", {{"seconds_from", "/days_remaining"}, {"unit", "days"}}}},
                          {{"id", "rel_minutes"},
                           {"path", "/holds/*"},
                           {"category", "constraint"},
                           {"key", "hold.{$1}"},
                           {"value", "{./id}"},
                           {"expire", {{"seconds_from", "./ttl"}, {"unit", "minutes"}}}}}}}}});
  Extractor ex(rules, {.clock = &clock});
  Extraction e = ex.ExtractToolOutput(
      Call("t"),
      R"({"a": 1, "days_remaining": 5, "holds": [{"id": "h0", "ttl": "2"}, {"id": "h1", "ttl": 0}]})");
  REQUIRE(e.errors.empty());
  CHECK(Find(e, Category::kConstraint, "a")->expire_after_turns == 3u);
  CHECK(Find(e, Category::kConstraint, "b")->expire_at_ms == 1'000'000 + 90'000);
  CHECK(Find(e, Category::kConstraint, "grace")->expire_at_ms == 1'000'000 + 5 * 86'400'000LL);
  CHECK(Find(e, Category::kConstraint, "hold.0")->expire_at_ms == 1'000'000 + 120'000);
  CHECK(Find(e, Category::kConstraint, "hold.0")->value == "h0");
  CHECK(Find(e, Category::kConstraint, "hold.1")->expire_at_ms == 1'000'000);

  Extraction bad = ex.ExtractToolOutput(Call("t"), R"({"days_remaining": -1})");
  REQUIRE(bad.errors.size() == 1);
  CHECK(bad.errors[0].rule == "days");
  CHECK(bad.errors[0].code == "invalid_expiry");
  CHECK(bad.updates.empty());
}

TEST_CASE("glob tool names and tools without rules", "[extract][mapping]") {
  Extractor ex(Rules({{"tools",
                       {{"get_*",
                         {{{"id", "any.status"},
                           {"path", "/status"},
                           {"category", "fact"},
                           {"key", "{@kind}.status"}}}}}}}));
  Extraction e =
      ex.ExtractToolOutput(Call("get_thing", "c1", {{"kind", "thing"}}), R"({"status": "ok"})");
  REQUIRE(e.updates.size() == 1);
  CHECK(e.updates[0].key == "thing.status");
  CHECK(ex.rules().HasRulesFor("get_order_details"));
  CHECK_FALSE(ex.rules().HasRulesFor("cancel_pending_order"));
  // A tool no rule names is not examined: not even malformed JSON is reported.
  Extraction none = ex.ExtractToolOutput(Call("cancel_pending_order"), "{oops");
  CHECK(none.updates.empty());
  CHECK(none.errors.empty());
}

TEST_CASE("a parsed output extracts the same as its text", "[extract][mapping]") {
  Extractor ex(Rules(OrderRules(json::array({{{"id", "order.item_price"},
                                              {"path", "/items/*/price"},
                                              {"category", "fact"},
                                              {"key", "order.{/order_id}.item.{item_id}.price"},
                                              {"coerce", "number"}}}))));
  Extraction raw = ex.ExtractToolOutput(Call("get_order_details"), kOrder);
  Extraction parsed = ex.ExtractParsedToolOutput(Call("get_order_details"), json::parse(kOrder));
  CHECK(raw.errors.empty());
  REQUIRE(raw.updates.size() == 2);
  CHECK(raw.updates == parsed.updates);
  // A decoded string output is the raw output.
  Extraction str = ex.ExtractParsedToolOutput(Call("get_order_details"), json(std::string(kOrder)));
  CHECK(str.updates == raw.updates);
}

}  // namespace
}  // namespace taskledger
