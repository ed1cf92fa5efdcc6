// serve::Service called directly from several threads at once (CI runs this
// under ThreadSanitizer): requests on shared and own conversations, with a
// provenance cache smaller than the conversations in use, each decide as if
// the conversation's whole history were indexed: the URL a user asked for in
// an earlier request is fetched, one the user never gave is refused. A
// request takes its conversation's index out of the cache (or rebuilds it from
// the store) and puts back what its session hands on; with the cache off every
// request rebuilds, with the same answers.
#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/commands/memory_command_store.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/serve/service.h"

namespace taskledger {
namespace {

using nlohmann::json;

std::shared_ptr<const RulePack> FetchPack() {
  auto pack = RulePack::FromFiles({{"pack.json", R"({
    "name": "fetch", "tools": {"egress": ["get_webpage"]}, "unknown_tools": "deny"})"},
                                   {"rules.lua", R"(
rule {
  id = "fetch.user_urls", tools = {"get_webpage"},
  check = function(call, ledger)
    for _, s in ipairs(call.sources("url")) do
      if s.kind == "user" then return allow() end
    end
    return deny(call.explain("url"))
  end,
}
)"}});
  REQUIRE(pack.has_value());
  return *pack;
}

json Post(serve::Service& service, const std::string& path, const json& body) {
  serve::ServeResponse r = service.Handle({"POST", path, {}, body.dump()});
  json out = json::parse(r.body, nullptr, false);
  out["status"] = r.status;
  return out;
}

// Runs `threads` threads of `rounds` rounds each on a service with a cache of
// `cache` conversations; returns the number of wrong answers.
int Run(size_t cache, int threads, int rounds, uint64_t* hits) {
  auto store = NewMemoryStore();
  auto commands = NewMemoryCommandStore();
  serve::ServiceOptions options;
  options.store = store.get();
  options.command_store = commands.get();
  options.pack = FetchPack();
  options.provenance_cache_conversations = cache;
  auto service = serve::Service::Create(options);
  REQUIRE(service.has_value());
  std::atomic<int> wrong{0};
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int r = 0; r < rounds; ++r) {
        // Two conversations every thread shares, and one of its own.
        const std::string conv =
            r % 3 == 2 ? "own-" + std::to_string(t) : "shared-" + std::to_string(r % 2);
        const std::string url =
            "www.site-" + std::to_string(t) + "-" + std::to_string(r) + ".example";
        json m = Post(**service, "/v1/message",
                      {{"conversation", conv}, {"text", "please read " + url}});
        json ok = Post(**service, "/v1/propose",
                       {{"conversation", conv},
                        {"call",
                         {{"id", "a" + std::to_string(r)},
                          {"tool", "get_webpage"},
                          {"arguments", {{"url", "https://" + url + "/"}}}}}});
        json no = Post(**service, "/v1/propose",
                       {{"conversation", conv},
                        {"call",
                         {{"id", "b" + std::to_string(r)},
                          {"tool", "get_webpage"},
                          {"arguments", {{"url", "www.never.example"}}}}}});
        // A conflict (409) after every retry is an answer too; a wrong decision is not.
        if (m["status"] != 200 && m["status"] != 409) ++wrong;
        const bool asked = m["status"] == 200;  // else the user's message is not there
        if (asked && ok["status"] == 200 && ok["decision"]["outcome"] != "allow") ++wrong;
        if (no["status"] == 200 && no["decision"]["outcome"] != "deny") ++wrong;
      }
    });
  }
  for (std::thread& w : workers) w.join();
  serve::ServeResponse metrics = (*service)->Handle({"GET", "/metrics", {}, ""});
  const std::string line = "\ntaskledger_serve_provenance_total{index=\"hit\"} ";
  const auto at = metrics.body.find(line);
  REQUIRE(at != std::string::npos);
  *hits = std::stoull(metrics.body.substr(at + line.size()));
  return wrong.load();
}

}  // namespace

TEST_CASE("serve: concurrent requests decide on the whole history, cached or rebuilt",
          "[serve][provenance]") {
  uint64_t hits = 0;
  CHECK(Run(/*cache=*/3, /*threads=*/4, /*rounds=*/12, &hits) == 0);
  CHECK(hits > 0);
  CHECK(Run(/*cache=*/0, /*threads=*/4, /*rounds=*/6, &hits) == 0);
  CHECK(hits == 0);
}

}  // namespace taskledger
