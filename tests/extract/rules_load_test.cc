// Loading extract.json: the packs in rules/ load, and every kind of mistake in
// a rule is refused with a message naming the rule.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "extract_test_util.h"

namespace taskledger {
namespace {

using extract_test::LoadError;
using nlohmann::json;

json OneRule(json rule) { return {{"tools", {{"t", json::array({std::move(rule)})}}}}; }

json Mapping() { return {{"id", "m"}, {"path", "/a"}, {"category", "fact"}, {"key", "k"}}; }

TEST_CASE("the packs in rules/ load", "[extract][load]") {
  for (const char* pack : {"retail", "subscription"}) {
    auto dir = std::filesystem::path(TASKLEDGER_SOURCE_DIR) / "rules" / pack;
    auto r = ExtractionRules::Load(dir, "v");
    INFO(pack << ": " << (r.has_value() ? "" : r.error().ToString()));
    REQUIRE(r.has_value());
    CHECK(r.value()->size() > 0);
    CHECK(r.value()->pack_version() == "v");
  }
}

TEST_CASE("a missing pack folder is NotFound; a pack without extract.json has no rules",
          "[extract][load]") {
  auto missing = ExtractionRules::Load("/nonexistent/pack/folder", "v");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code() == StatusCode::kNotFound);

  auto dir = std::filesystem::temp_directory_path() / "taskledger_extract_empty_pack";
  std::filesystem::create_directories(dir);
  auto empty = ExtractionRules::Load(dir, "v");
  REQUIRE(empty.has_value());
  CHECK(empty.value()->size() == 0);
  CHECK(empty.value()->limits().max_output_bytes == 1u << 20);
  CHECK(empty.value()->limits().max_depth == 64);

  std::ofstream(dir / "extract.json") << "{\"tools\": ";
  auto broken = ExtractionRules::Load(dir, "v");
  REQUIRE_FALSE(broken.has_value());
  CHECK(broken.error().code() == StatusCode::kInvalidArgument);
  std::filesystem::remove_all(dir);
}

TEST_CASE("limits are read and bounded", "[extract][load]") {
  auto r =
      ExtractionRules::FromJson({{"limits", {{"max_output_bytes", 100}, {"max_depth", 3}}}}, "v");
  REQUIRE(r.has_value());
  CHECK(r.value()->limits().max_output_bytes == 100);
  CHECK(r.value()->limits().max_depth == 3);
  CHECK(LoadError({{"limits", {{"max_depth", 100000}}}}).message().find("max_depth") !=
        std::string::npos);
  CHECK(LoadError({{"limits", {{"max_output_bytes", 0}}}}).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("mistakes in rules are refused with the rule named", "[extract][load]") {
  struct Case {
    const char* what;
    json spec;
    const char* expect;  // a fragment of the message
  };
  auto with = [](const char* field, json value) {
    json m = Mapping();
    m[field] = std::move(value);
    return OneRule(m);
  };
  auto without = [](const char* field) {
    json m = Mapping();
    m.erase(field);
    return OneRule(m);
  };
  std::vector<Case> cases = {
      {"unknown field", with("kee", "x"), "unknown field 'kee'"},
      {"unknown category", with("category", "fcat"), "unknown category"},
      {"missing key", without("key"), "key is required"},
      {"missing id", without("id"), "id must be"},
      {"bad pointer", with("path", "a/b"), "must start with '/'"},
      {"bad escape", with("path", "/a~2"), "'~'"},
      {"unclosed placeholder", with("key", "order.{id"), "unclosed"},
      {"capture 0 in a mapping", with("key", "x.{$0}"), "wildcards count from $1"},
      {"bad coercion", with("coerce", "float"), "coerce must be"},
      {"bad expiry", with("expire", {{"turns", 0}}), "turns must be"},
      {"two expiries", with("expire", {{"turns", 1}, {"seconds", 1}}), "exactly one"},
      {"bad unit", with("expire", {{"seconds_from", "/a"}, {"unit", "weeks"}}), "unit must be"},
      {"path and text", with("text", "x"), "exactly one of path and text"},
      {"bad regex",
       OneRule({{"id", "r"}, {"text", "(unclosed"}, {"category", "fact"}, {"key", "k"}}),
       "regular expression"},
      {"field placeholder in a text rule",
       OneRule({{"id", "r"}, {"text", "x"}, {"category", "fact"}, {"key", "k.{name}"}}),
       "is not a capture"},
      {"duplicate id",
       {{"tools", {{"t", json::array({Mapping(), Mapping()})}}}},
       "duplicate rule id"},
      {"argument in a user pattern",
       {{"user", {{{"id", "u"}, {"pattern", "x"}, {"category", "fact"}, {"key", "{@a}"}}}}},
       "not available for a user message"},
      {"confirmation with a key",
       {{"user", {{{"id", "u"}, {"pattern", "yes"}, {"confirmation", true}, {"key", "k"}}}}},
       "unknown field 'key'"},
      {"verified user pattern",
       {{"user",
         {{{"id", "u"},
           {"pattern", "x"},
           {"category", "fact"},
           {"key", "k"},
           {"verified", true}}}}},
       "unknown field 'verified'"},
      {"tools not an object", {{"tools", json::array()}}, "must be an object"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    Status s = LoadError(c.spec);
    INFO(s.ToString());
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message().find(c.expect) != std::string::npos);
  }
  // The rule is named, so a pack author can find it.
  CHECK(LoadError(with("coerce", "float")).message().find("rule 'm'") != std::string::npos);
}

TEST_CASE("the same rule id may serve several tools", "[extract][load]") {
  auto r = ExtractionRules::FromJson(
      {{"tools", {{"a", json::array({Mapping()})}, {"b", json::array({Mapping()})}}}}, "v");
  REQUIRE(r.has_value());
  CHECK(r.value()->size() == 2);
}

}  // namespace
}  // namespace taskledger
