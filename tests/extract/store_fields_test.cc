// "store" in an extract.json mapping: "whole" (the default) keeps an object or
// array as one entry with one provenance; "fields" writes one entry per scalar
// below it, member names escaped as key segments and array elements by their
// 0-based index, each with the mapping's provenance and expiry. Misuse fails
// the load or the mapping (never a partial record).
#include "extract_test_util.h"

namespace taskledger {
namespace {

using extract_test::Call;
using extract_test::Find;
using extract_test::LoadError;
using extract_test::Rules;
using nlohmann::json;

json OrderMapping(const json& extra) {
  json m = {{"id", "order"}, {"path", ""}, {"category", "fact"}, {"key", "order.{order_id}"}};
  m.update(extra);
  return {{"tools", {{"get_order_details", json::array({m})}}}};
}

const json kOrder = {{"order_id", "#W1"},
                     {"status", "pending"},
                     {"items", {{{"item_id", "11"}, {"price", 12.5}}, {{"item_id", "12"}}}},
                     {"address", {{"zip.code", "78701"}}},
                     {"notes", json::array()}};

}  // namespace

TEST_CASE("a mapping stores an object whole by default and on store whole", "[extract][store]") {
  for (const json& extra : {json::object(), json{{"store", "whole"}}}) {
    Extractor ex(Rules(OrderMapping(extra)));
    Extraction e = ex.ExtractToolOutput(Call("get_order_details"), kOrder.dump());
    REQUIRE(e.errors.empty());
    REQUIRE(e.updates.size() == 1);
    CHECK(e.updates[0].key == "order.#W1");
    CHECK(e.updates[0].value == kOrder);
  }
}

TEST_CASE("store fields writes one entry per scalar with the mapping's provenance",
          "[extract][store]") {
  Extractor ex(Rules(OrderMapping({{"store", "fields"}, {"expire", {{"turns", 3}}}})));
  Extraction e = ex.ExtractToolOutput(Call("get_order_details", "call-9"), kOrder.dump());
  REQUIRE(e.errors.empty());
  std::map<std::string, json> got;
  for (const Update& u : e.updates) {
    got[u.key] = u.value;
    CHECK(u.provenance.rule_id == "order");
    CHECK(u.provenance.source_id == "get_order_details#call-9");
    CHECK(u.provenance.verified);
    CHECK(u.expire_after_turns == std::optional<uint64_t>(3));
  }
  const std::map<std::string, json> want = {
      {"order.#W1.order_id", "#W1"},
      {"order.#W1.status", "pending"},
      {"order.#W1.items.0.item_id", "11"},
      {"order.#W1.items.0.price", 12.5},
      {"order.#W1.items.1.item_id", "12"},
      {"order.#W1.address.zip%2Ecode", "78701"},  // a member name is one segment
      {"order.#W1.notes", json::array()},         // an empty array is kept, as itself
  };
  CHECK(got == want);
  // A scalar value is one entry either way.
  Extractor scalar(Rules(OrderMapping({{"store", "fields"}, {"path", "/status"}})));
  Extraction s = scalar.ExtractToolOutput(Call("get_order_details"), kOrder.dump());
  REQUIRE(s.updates.size() == 1);
  CHECK(s.updates[0].value == "pending");
}

TEST_CASE("store is checked when the pack loads", "[extract][store]") {
  CHECK(LoadError(OrderMapping({{"store", "flat"}}))
            .message()
            .find("store must be \"whole\" or \"fields\"") != std::string::npos);
  CHECK(LoadError(OrderMapping({{"store", "fields"}, {"coerce", "string"}}))
            .message()
            .find("cannot be used with \"store\": \"fields\"") != std::string::npos);
  // Only mappings store structure: a text rule has no "store".
  json text = {{"tools",
                {{"find_user", json::array({{{"id", "u"},
                                             {"text", "^(.+)$"},
                                             {"category", "identifier"},
                                             {"key", "user"},
                                             {"store", "fields"}}})}}}};
  CHECK(LoadError(text).message().find("store") != std::string::npos);
}

TEST_CASE("a value with too many fields fails its mapping and writes none of them",
          "[extract][store]") {
  json big = json::object();
  for (int i = 0; i < 1001; ++i) big["f" + std::to_string(i)] = i;
  json spec = OrderMapping({{"store", "fields"}, {"key", "blob"}});
  spec["tools"]["get_order_details"].push_back(
      {{"id", "other"}, {"path", "/f1"}, {"category", "fact"}, {"key", "one"}});
  Extractor ex(Rules(spec));
  Extraction e = ex.ExtractToolOutput(Call("get_order_details"), big.dump());
  REQUIRE(e.errors.size() == 1);
  CHECK(e.errors[0].code == "too_many_fields");
  CHECK(e.errors[0].rule == "order");
  // The other mapping of the same output is unaffected.
  REQUIRE(e.updates.size() == 1);
  CHECK(e.updates[0].key == "one");
}

}  // namespace taskledger
