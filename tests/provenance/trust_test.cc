// TrustPolicy as a pack declares it: defaults, whole tools, per-path pointers
// with wildcards, tool globs, precedence, and clear errors for bad input.
#include "taskledger/provenance/trust.h"

#include <catch2/catch.hpp>

namespace taskledger::provenance {
namespace {

TrustPolicy Parse(const char* text) {
  auto policy = TrustPolicy::FromJson(nlohmann::json::parse(text));
  REQUIRE(policy.has_value());
  return std::move(policy).value();
}

TEST_CASE("trust: nothing declared trusts the user and no tool", "[provenance]") {
  auto policy = TrustPolicy::FromJson(nullptr);
  REQUIRE(policy.has_value());
  CHECK(policy->user_trusted());
  CHECK_FALSE(policy->Trusted("get_balance", ""));
  CHECK_FALSE(policy->Trusted("get_balance", "/amount"));
}

TEST_CASE("trust: per tool and per output path", "[provenance]") {
  const TrustPolicy p = Parse(R"({
    "default": false,
    "tools": {
      "read_channel_messages": {"/*/sender": true, "/*/body": false},
      "read_inbox": {"**": true, "/messages/*/body": false},
      "get_webpage": false,
      "list_*": true,
      "list_secret*": false
    }})");
  CHECK(p.Trusted("read_channel_messages", "/3/sender"));
  CHECK_FALSE(p.Trusted("read_channel_messages", "/3/body"));
  CHECK_FALSE(p.Trusted("read_channel_messages", "/3/recipient"));  // no pattern: default
  CHECK(p.Trusted("read_inbox", "/user"));
  CHECK(p.Trusted("read_inbox", "/messages/0/sender"));
  CHECK_FALSE(p.Trusted("read_inbox", "/messages/0/body"));  // more literal segments win
  CHECK_FALSE(p.Trusted("get_webpage", ""));
  CHECK(p.Trusted("list_channels", "/0"));
  CHECK_FALSE(p.Trusted("list_secrets", "/0"));  // the longer glob wins
  CHECK_FALSE(p.Trusted("other", "/0"));
}

TEST_CASE("trust: a tie between trusted and untrusted is untrusted", "[provenance]") {
  const TrustPolicy p = Parse(R"({"tools": {"t": {"/*/a": true, "/x/*": false}}})");
  CHECK_FALSE(p.Trusted("t", "/x/a"));
  CHECK(p.Trusted("t", "/y/a"));
}

TEST_CASE("trust: user distrusted and default trusted when declared", "[provenance]") {
  const TrustPolicy p = Parse(R"({"user": false, "default": true})");
  CHECK_FALSE(p.user_trusted());
  CHECK(p.Trusted("anything", "/a"));
  CHECK(p.ToJson()["user"] == false);
}

TEST_CASE("trust: bad declarations are errors naming the key", "[provenance]") {
  auto err = [](const char* text) {
    auto r = TrustPolicy::FromJson(nlohmann::json::parse(text));
    REQUIRE_FALSE(r.has_value());
    return r.error().message();
  };
  CHECK_THAT(err(R"({"users": true})"), Catch::Contains("unknown key \"users\""));
  CHECK_THAT(err(R"({"user": "yes"})"), Catch::Contains("trust.user"));
  CHECK_THAT(err(R"({"tools": {"t": {"body": true}}})"), Catch::Contains("JSON pointer"));
  CHECK_THAT(err(R"({"tools": {"t": 1}})"), Catch::Contains("trust.tools.t"));
  CHECK_THAT(err(R"([1])"), Catch::Contains("must be an object"));
}

}  // namespace
}  // namespace taskledger::provenance
