// Fuzz target: the request handler of `taskledger serve` (serve::Service::
// Handle, the route dispatch without sockets), over the memory store with the
// subscription pack and two tenants' tokens (one of them an operator's).
// Input: "METHOD PATH\n" then header lines "Name: value" up to an empty line,
// then the body (hostile methods, paths, headers, tokens and JSON bodies).
// Properties: nothing throws or crashes; the status is one the API documents;
// every answer but /metrics is a JSON object, an error one {"error": {"code",
// "message"}}; a refused request (400, 401, 403, 404, 405, 413) changes no
// conversation: the tenant's conversations and the named one's head are as
// before; a request without a known token never reaches a conversation route.
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_pack.h"
#include "fuzz_support.h"
#include "taskledger/base/json_depth.h"
#include "taskledger/commands/memory_command_store.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/serve/service.h"

namespace taskledger::fuzz {
namespace {

const char* kUserToken = "fuzz-user-token";
const char* kOperatorToken = "fuzz-operator-token";

struct Fixture {
  std::unique_ptr<Store> store = NewMemoryStore();
  std::unique_ptr<CommandStore> commands;
  std::unique_ptr<serve::Service> service;
};

Fixture& TheFixture() {
  static auto* f = [] {
    auto* fx = new Fixture;
    fx->commands = NewMemoryCommandStore();
    serve::ServiceOptions options;
    options.store = fx->store.get();
    options.command_store = fx->commands.get();
    options.pack = FixturePack(SourcePackFiles("subscription"));
    options.tokens = {{serve::HashToken(kUserToken), "acme", false},
                      {serve::HashToken(kOperatorToken), "acme", true}};
    options.max_body_bytes = 4096;
    auto service = serve::Service::Create(std::move(options));
    if (!service.has_value()) {
      std::fprintf(stderr, "fuzz: service: %s\n", service.error().ToString().c_str());
      std::abort();
    }
    fx->service = std::move(service).value();
    return fx;
  }();
  return *f;
}

serve::ServeRequest ParseRequest(std::string_view input) {
  serve::ServeRequest r;
  auto [first, rest] = SplitFirstLine(input);
  const size_t space = first.find(' ');
  r.method = std::string(first.substr(0, space));
  r.path = space == std::string_view::npos ? "" : std::string(first.substr(space + 1));
  while (!rest.empty()) {
    auto [line, after] = SplitFirstLine(rest);
    rest = after;
    if (line.empty()) break;
    const size_t colon = line.find(':');
    std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    r.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  r.body = std::string(rest);
  return r;
}

// The named conversation's head, or -1 when the body names none.
int64_t HeadOf(Store& store, const serve::ServeRequest& r) {
  if (JsonNestsDeeperThan(r.body, 64)) return -1;  // the service refuses it unread
  nlohmann::json body = nlohmann::json::parse(r.body, nullptr, false);
  if (!body.is_object() || !body.contains("conversation") || !body["conversation"].is_string()) {
    return -1;
  }
  auto head = store.Head({"acme", body["conversation"].get<std::string>()});
  return head.has_value() ? static_cast<int64_t>(*head) : -2;
}

}  // namespace
}  // namespace taskledger::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace taskledger;
  using namespace taskledger::fuzz;
  Fixture& fx = TheFixture();
  const serve::ServeRequest request = ParseRequest(AsView(data, size));
  // Keeps the store (and the checks below, which list it) small.
  std::vector<std::string> existing = fx.store->ListConversations("acme").value();
  if (existing.size() > 256) {
    for (const std::string& c : existing) (void)fx.store->DropConversation({"acme", c});
    existing.clear();
  }
  const size_t conversations_before = existing.size();
  const int64_t head_before = HeadOf(*fx.store, request);

  const serve::ServeResponse response = fx.service->Handle(request);

  static const std::set<int> kDocumented = {200, 400, 401, 403, 404, 405,
                                            409, 413, 429, 500, 503, 504};
  TL_FUZZ_CHECK(kDocumented.count(response.status) == 1,
                "undocumented status " + std::to_string(response.status));
  if (request.path != "/metrics" || response.status != 200) {
    nlohmann::json body = nlohmann::json::parse(response.body, nullptr, false);
    TL_FUZZ_CHECK(body.is_object(), "the answer is not a JSON object: " + response.body);
    if (response.status >= 400 && response.status != 503) {
      TL_FUZZ_CHECK(body.contains("error") && body["error"].contains("code") &&
                        body["error"]["code"].is_string() && body["error"].contains("message"),
                    "an error without {code, message}: " + response.body);
    }
  }
  bool known_token = false;
  for (const auto& [name, value] : request.headers) {
    known_token = known_token || value == std::string("Bearer ") + kUserToken ||
                  value == std::string("Bearer ") + kOperatorToken;
  }
  if (!known_token && request.path.rfind("/v1/", 0) == 0) {
    TL_FUZZ_CHECK(response.status == 401 || response.status == 404 || response.status == 405,
                  "a request without a known token got " + std::to_string(response.status));
  }
  static const std::set<int> kRefused = {400, 401, 403, 404, 405, 413};
  if (kRefused.count(response.status) == 1) {
    TL_FUZZ_CHECK(fx.store->ListConversations("acme").value().size() == conversations_before,
                  "a refused request created a conversation");
    TL_FUZZ_CHECK(HeadOf(*fx.store, request) == head_before,
                  "a refused request moved a conversation's head");
  }
  return 0;
}
