// Mappings that name the same parts of one output. Absolute placeholders and
// path prefixes shared by many mappings are resolved once per output; values
// that several updates take from one node, or from nodes inside one another,
// are moved out of an output the extractor owns where nothing else needs
// them. None of that may show: every update must be what it would be if each
// mapping read the output alone, and an output the caller passes in stays as
// it was.
#include "extract_test_util.h"

namespace taskledger {
namespace {

using extract_test::Call;
using extract_test::Find;
using extract_test::Rules;
using nlohmann::json;

json Mapping(const char* id, const char* path, const char* key,
             const json& extra = json::object()) {
  json m = {{"id", id}, {"path", path}, {"category", "fact"}, {"key", key}};
  m.update(extra);
  return m;
}

json ToolRules(const char* tool, json mappings) {
  return {{"tools", {{tool, std::move(mappings)}}}};
}

const Update& Get(const Extraction& e, const std::string& key) {
  const Update* u = Find(e, Category::kFact, key);
  INFO("key " << key << " in " << EncodeExtractionErrors(e.errors).dump());
  REQUIRE(u != nullptr);
  return *u;
}

TEST_CASE("placeholders and path prefixes shared by many mappings resolve per output",
          "[extract][shared]") {
  Extractor ex(
      Rules(ToolRules("t", json::array({
                               Mapping("id", "/order/id", "o.{/order/id}.id"),
                               Mapping("skus", "/order/lines/*/sku",
                                       "o.{/order/id}.line.{$1}.first.{/order/lines/0/sku}"),
                               Mapping("qty", "/order/lines/1/qty", "o.{/order/id}.qty1"),
                               Mapping("slash", "/order/a~1b", "o.{/order/id}.slash.{/order/a~1b}"),
                               Mapping("absent", "/order/missing/x", "never"),
                               Mapping("through_scalar", "/order/id/deeper", "never.either"),
                               Mapping("absent_key", "/status", "s.{/order/missing}"),
                               Mapping("past_end", "/status", "s.{/order/lines/9/sku}"),
                               Mapping("whole", "", "doc"),
                           }))));
  const char* first = R"({"status": "open", "order": {"id": "A1", "a/b": "slash",
      "lines": [{"sku": "s0", "qty": 1}, {"sku": "s1", "qty": 2}]}})";
  Extraction a = ex.ExtractToolOutput(Call("t"), first);
  CHECK(a.errors.empty());
  CHECK(Get(a, "o.A1.id").value == "A1");
  CHECK(Get(a, "o.A1.line.0.first.s0").value == "s0");
  CHECK(Get(a, "o.A1.line.1.first.s0").value == "s1");
  CHECK(Get(a, "o.A1.qty1").value == 2);
  CHECK(Get(a, "o.A1.slash.slash").value == "slash");
  CHECK(Get(a, "doc").value == json::parse(first));
  // Nothing for a path or placeholder that leads nowhere, and no error either.
  CHECK(a.updates.size() == 6);

  // The next output is read afresh: nothing is remembered from the first.
  const char* second = R"({"status": "done", "order": {"id": "B2", "lines": [{"sku": "t0"}],
      "missing": {"x": 5}}})";
  Extraction b = ex.ExtractToolOutput(Call("t"), second);
  CHECK(b.errors.empty());
  CHECK(Get(b, "o.B2.id").value == "B2");
  CHECK(Get(b, "o.B2.line.0.first.t0").value == "t0");
  CHECK(Get(b, "never").value == 5);
  CHECK(Find(b, Category::kFact, "o.B2.qty1") == nullptr);
  CHECK(Find(b, Category::kFact, "o.A1.id") == nullptr);
  CHECK(Get(b, "doc").value == json::parse(second));
}

TEST_CASE("a required placeholder that leads nowhere names itself", "[extract][shared]") {
  Extractor ex(Rules(ToolRules("t", json::array({
                                        Mapping("ok", "/a", "a.{/a}"),
                                        Mapping("needs", "/a", "a.{/b/c}", {{"required", true}}),
                                    }))));
  Extraction e = ex.ExtractToolOutput(Call("t"), R"({"a": "x", "b": {"d": 1}})");
  REQUIRE(e.errors.size() == 1);
  CHECK(e.errors[0].rule == "needs");
  CHECK(e.errors[0].code == "unresolved");
  CHECK(e.errors[0].message.value_or("").find("{/b/c}") != std::string::npos);
  REQUIRE(e.updates.size() == 1);
  CHECK(e.updates[0].key == "a.x");
}

TEST_CASE("an exact tool entry and a matching glob entry each resolve their own pointers",
          "[extract][shared]") {
  Extractor ex(Rules({{"tools",
                       {{"get_order", {Mapping("exact", "/id", "exact.{/id}.{/kind}")}},
                        {"get_*",
                         {Mapping("glob", "/kind", "glob.{/kind}.{/id}"),
                          Mapping("glob_name", "/name", "glob.{/name}")}}}}}));
  Extraction e =
      ex.ExtractToolOutput(Call("get_order"), R"({"id": "7", "kind": "order", "name": "n"})");
  CHECK(e.errors.empty());
  REQUIRE(e.updates.size() == 3);
  CHECK(e.updates[0].key == "exact.7.order");  // the exact entry first
  CHECK(e.updates[1].key == "glob.order.7");
  CHECK(e.updates[2].key == "glob.n");
  CHECK(e.updates[2].value == "n");
}

const char* kNested = R"({"status": "open",
  "address": {"city": "Philadelphia", "zip": "19122", "lines": ["763 Broadway", "Suite 135"]},
  "items": [{"name": "Headphones", "tags": ["red", "wireless"]}, {"name": "Vacuum", "tags": []}]})";

json NestedRules() {
  return ToolRules("t",
                   json::array({
                       Mapping("zip", "/address/zip", "zip"),
                       Mapping("address", "/address", "address"),
                       Mapping("zip_again", "/status", "zip_again", {{"value", "{/address/zip}"}}),
                       Mapping("city", "/address/city", "city", {{"coerce", "string"}}),
                       Mapping("line", "/address/lines/*", "line.{$1}"),
                       Mapping("item_tags", "/items/*/tags", "tags.{name}"),
                       Mapping("items", "/items", "items"),
                       Mapping("first_tag", "/items/0/tags/0", "first_tag"),
                       Mapping("everything", "", "everything"),
                       Mapping("status", "/status", "status"),
                       Mapping("status_rel", "/status", "status_rel", {{"value", "{.}"}}),
                   }));
}

TEST_CASE("updates taking the same node, or nodes inside one another, get whole values",
          "[extract][shared]") {
  Extractor ex(Rules(NestedRules()));
  const json doc = json::parse(kNested);
  Extraction e = ex.ExtractToolOutput(Call("t"), kNested);
  CHECK(e.errors.empty());
  CHECK(e.updates.size() == 13);
  CHECK(Get(e, "zip").value == "19122");
  CHECK(Get(e, "zip_again").value == "19122");
  CHECK(Get(e, "address").value == doc["address"]);
  CHECK(Get(e, "city").value == "Philadelphia");
  CHECK(Get(e, "line.0").value == "763 Broadway");
  CHECK(Get(e, "line.1").value == "Suite 135");
  CHECK(Get(e, "tags.Headphones").value == json({"red", "wireless"}));
  CHECK(Get(e, "tags.Vacuum").value == json::array());
  CHECK(Get(e, "items").value == doc["items"]);
  CHECK(Get(e, "first_tag").value == "red");
  CHECK(Get(e, "everything").value == doc);
  CHECK(Get(e, "status").value == "open");
  CHECK(Get(e, "status_rel").value == "open");

  // The same output already parsed by the caller: same updates, and the
  // caller's value is left as it was.
  const json parsed = json::parse(kNested);
  Extraction p = ex.ExtractParsedToolOutput(Call("t"), parsed);
  CHECK(parsed == doc);
  CHECK(p.updates == e.updates);
}

TEST_CASE("a failing mapping does not take values from the mappings after it",
          "[extract][shared]") {
  Extractor ex(
      Rules(ToolRules("t", json::array({
                               Mapping("first", "/items/0/name", "first"),
                               // Only the first item has a code: the mapping fails and keeps
                               // nothing, not even the label it took for the first item.
                               Mapping("coded", "/items/*/name", "coded.{code}",
                                       {{"required", true}, {"value", "{/label}"}}),
                               Mapping("names", "/items/*/name", "name.{$1}"),
                               Mapping("whole_items", "/items", "items"),
                           }))));
  const char* text = R"({"label": "L", "items": [{"name": "a", "code": "x"}, {"name": "b"}]})";
  Extraction e = ex.ExtractToolOutput(Call("t"), text);
  REQUIRE(e.errors.size() == 1);
  CHECK(e.errors[0].rule == "coded");
  CHECK(Find(e, Category::kFact, "coded.x") == nullptr);
  CHECK(Get(e, "first").value == "a");
  CHECK(Get(e, "name.0").value == "a");
  CHECK(Get(e, "name.1").value == "b");
  CHECK(Get(e, "items").value == json::parse(text)["items"]);
  CHECK(e.updates.size() == 4);
}

}  // namespace
}  // namespace taskledger
