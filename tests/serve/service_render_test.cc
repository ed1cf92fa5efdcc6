// serve::Service's /v1/render applies the tenant's pack.json "render"
// (docs/render.md, "Keeping data out of the prompt"): internal entries are
// left out of the state block and redacted fields replaced, while /v1/state
// (the auditor's view) still holds every value; a malformed render section
// stops the pack from loading instead of rendering everything.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "taskledger/base/digest.h"
#include "taskledger/commands/memory_command_store.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/serve/service.h"

namespace taskledger {
namespace {

using nlohmann::json;

// A pack whose get_customer output is kept whole (customer.<id>) and whose
// tier is a field (customer.<id>.tier), with `render` as its render section.
Result<std::shared_ptr<const RulePack>> CrmPack(const std::string& render) {
  return RulePack::FromFiles(
      {{"pack.json", R"({"name": "crm", "tools": {"read_only": ["get_customer"],
         "writes": ["email_customer"]}, "render": )" +
                         render + "}"},
       {"extract.json", R"({"tools": {"get_customer": [
         {"id": "customer.record", "path": "/profile", "category": "fact", "key": "customer.{@id}"},
         {"id": "customer.tier", "path": "/tier", "category": "fact",
          "key": "customer.{@id}.tier"}]}})"},
       {"policy.lua", R"(rule { id = "crm.ok", tools = {"email_customer"},
         check = function(call, ledger) return allow() end })"}});
}

json Post(serve::Service& service, const std::string& path, const json& body) {
  serve::ServeResponse r =
      service.Handle({"POST", path, {{"Authorization", "Bearer crm-token"}}, body.dump()});
  INFO(path << " " << r.body);
  REQUIRE(r.status == 200);
  return json::parse(r.body);
}

}  // namespace

TEST_CASE("serve: /v1/render keeps what pack.json render hides out of the state block", "[serve]") {
  auto store = NewMemoryStore();
  auto commands = NewMemoryCommandStore();
  auto pack = CrmPack(R"({"internal": ["customer.*.tier"], "redact": {"customer.*": ["/dob"]}})");
  REQUIRE(pack.has_value());
  serve::ServiceOptions options;
  options.store = store.get();
  options.command_store = commands.get();
  options.pack = *pack;
  options.tokens = {{Sha256Hex("crm-token"), "crm", false}};
  auto service = serve::Service::Create(options);
  REQUIRE(service.has_value());
  serve::Service& s = **service;

  const json call = {{"id", "c0"}, {"tool", "get_customer"}, {"arguments", {{"id", "C7"}}}};
  Post(s, "/v1/open", {{"conversation", "crm-1"}});
  CHECK(Post(s, "/v1/propose", {{"conversation", "crm-1"}, {"call", call}})["execute"] == true);
  Post(s, "/v1/outcome",
       {{"conversation", "crm-1"},
        {"call", call},
        {"status", "ok"},
        {"output", {{"tier", "gold"}, {"profile", {{"name", "Ada"}, {"dob", "1990-02-03"}}}}}});

  // The auditor's view holds every value...
  const std::string state = Post(s, "/v1/state", {{"conversation", "crm-1"}}).dump();
  CHECK(state.find("gold") != std::string::npos);
  CHECK(state.find("1990-02-03") != std::string::npos);
  // ...the prompt's block neither the internal tier nor the date of birth.
  for (const char* format : {"markdown", "plain", "xml"}) {
    const std::string block =
        Post(s, "/v1/render", {{"conversation", "crm-1"}, {"format", format}})["state_block"];
    INFO(format << ":\n" << block);
    CHECK(block.find("Ada") != std::string::npos);
    CHECK(block.find("[redacted]") != std::string::npos);
    CHECK(block.find("gold") == std::string::npos);
    CHECK(block.find("customer.C7.tier") == std::string::npos);
    CHECK(block.find("1990-02-03") == std::string::npos);
  }
}

TEST_CASE("serve: a pack with a malformed render section is not served", "[serve]") {
  auto store = NewMemoryStore();
  auto commands = NewMemoryCommandStore();
  auto pack = CrmPack(R"({"internal": "customer.*.tier"})");
  REQUIRE(pack.has_value());
  serve::ServiceOptions options;
  options.store = store.get();
  options.command_store = commands.get();
  options.pack = *pack;
  auto service = serve::Service::Create(options);
  REQUIRE_FALSE(service.has_value());
  CHECK_THAT(service.error().message(),
             Catch::Contains("render") && Catch::Contains("internal must be an array"));
}

}  // namespace taskledger
