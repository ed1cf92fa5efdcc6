// Pack constants: pack.json's `constants` parsed (a value or a list per name),
// bad shapes refused with the offending key named, and the values fed to an
// index as trusted sources of kind `constant` that match however an agent
// spaces or cases them.
#include "taskledger/provenance/constants.h"

#include <catch2/catch.hpp>

namespace taskledger::provenance {
namespace {

TEST_CASE("constants: values and lists parse by name, null is none", "[provenance]") {
  auto none = ParseConstants(nullptr);
  REQUIRE(none.has_value());
  CHECK(none->empty());
  auto r = ParseConstants(nlohmann::json::parse(
      R"({"support": ["help@example.org", "www.example.org/help"], "own": "CH93 0076 2011"})"));
  REQUIRE(r.has_value());
  REQUIRE(r->size() == 3);
  CHECK((*r)[0].name == "own");
  CHECK((*r)[1].name == "support");
  CHECK((*r)[1].value == "help@example.org");
  CHECK((*r)[2].value == "www.example.org/help");
}

TEST_CASE("constants: bad shapes are refused naming the key", "[provenance]") {
  auto message = [](const char* json) {
    auto r = ParseConstants(nlohmann::json::parse(json));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code() == StatusCode::kInvalidArgument);
    return r.error().message();
  };
  CHECK(message(R"(["a"])").find("must be an object") != std::string::npos);
  CHECK(message(R"({"a": 5})").find("'a' must be a non-empty string") != std::string::npos);
  CHECK(message(R"({"a": ""})").find("'a'") != std::string::npos);
  CHECK(message(R"({"a": []})").find("'a' is an empty list") != std::string::npos);
  CHECK(message(R"({"a": ["x", null]})").find("'a'[1]") != std::string::npos);
  CHECK(message(R"({"": "x"})").find("name is empty") != std::string::npos);
  nlohmann::json big = {{"a", std::string(kMaxConstantBytes + 1, 'x')}};
  CHECK(ParseConstants(big).error().message().find("longer than") != std::string::npos);
}

TEST_CASE("constants: fed to the index as trusted constant sources", "[provenance]") {
  ProvenanceIndex index;
  REQUIRE(AddConstants(index, nlohmann::json::parse(
                                  R"({"own": "CH93 0076 2011 6238 5295 7",
                                      "site": ["https://www.example.org/"]})"))
              .ok());
  auto own = index.SourcesOf("ch9300762011623852957");
  REQUIRE(own.has_value());
  REQUIRE(own->size() == 1);
  CHECK((*own)[0]->kind == SourceKind::kConstant);
  CHECK((*own)[0]->trusted);
  CHECK((*own)[0]->tool == "own");
  CHECK((*own)[0]->Describe() == "the pack's constant own, trusted");
  auto site = index.SourcesOf("example.org");
  REQUIRE(site.has_value());
  CHECK(site->size() == 1);
  CHECK(index.SourcesOf("CH9300762011623852958")->empty());
  // A bad object adds nothing.
  ProvenanceIndex other;
  CHECK_FALSE(AddConstants(other, nlohmann::json::parse(R"({"a": 1})")).ok());
  CHECK(other.source_count() == 0);
}

}  // namespace
}  // namespace taskledger::provenance
