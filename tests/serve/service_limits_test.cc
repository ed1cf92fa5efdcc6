// serve::Service called directly (no transport): a tenant with
// max_concurrent_per_tenant requests running gets 429 for the next one while
// another tenant is still served, and the slot comes back when a request
// ends; a request that passes its tenant's time limit is answered 504 and
// commits nothing. A store whose reads can be held open keeps a request
// running.
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "support/forwarding_store.h"
#include "taskledger/base/digest.h"
#include "taskledger/commands/memory_command_store.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/serve/service.h"

namespace taskledger {
namespace {

// A memory store whose ReadHead waits while `hold` is set.
class HeldStore : public testing::ForwardingStore {
 public:
  Result<LedgerState> ReadHead(const ConversationId& id) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return !hold_; });
    --waiting_;
    lock.unlock();
    return inner().ReadHead(id);
  }
  void Hold(bool on) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = on;
    cv_.notify_all();
  }
  void WaitForReader() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return waiting_ > 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool hold_ = false;
  int waiting_ = 0;
};

}  // namespace

TEST_CASE("serve: a tenant at its concurrent-request limit gets 429, others are served",
          "[serve]") {
  HeldStore store;
  auto commands = NewMemoryCommandStore();
  auto pack = RulePack::FromFiles({{"pack.json", R"({"name": "p", "unknown_tools": "deny"})"}});
  REQUIRE(pack.has_value());
  serve::ServiceOptions options;
  options.store = &store;
  options.command_store = commands.get();
  options.pack = *pack;
  options.max_concurrent_per_tenant = 1;
  options.tokens = {{Sha256Hex("a-token"), "a", false}, {Sha256Hex("b-token"), "b", false}};
  auto service = serve::Service::Create(options);
  REQUIRE(service.has_value());
  auto request = [](const std::string& token) {
    return serve::ServeRequest{"POST",
                               "/v1/message",
                               {{"Authorization", "Bearer " + token}},
                               R"({"conversation": "c", "text": "hello"})"};
  };

  store.Hold(true);
  serve::ServeResponse held;
  std::thread first([&] { held = (*service)->Handle(request("a-token")); });
  store.WaitForReader();  // tenant a's request is running, inside the store
  serve::ServeResponse refused = (*service)->Handle(request("a-token"));
  CHECK(refused.status == 429);
  CHECK(refused.body.find("too_many_requests") != std::string::npos);
  serve::ServeResponse other_tenant;
  std::thread other([&] { other_tenant = (*service)->Handle(request("b-token")); });
  store.Hold(false);
  first.join();
  other.join();
  CHECK(held.status == 200);
  CHECK(other_tenant.status == 200);
  CHECK((*service)->Handle(request("a-token")).status == 200);  // the slot came back
}

TEST_CASE("serve: a request past its tenant's time limit gets 504 and writes nothing", "[serve]") {
  HeldStore store;
  auto commands = NewMemoryCommandStore();
  auto pack = RulePack::FromFiles({{"pack.json", R"({"name": "p", "unknown_tools": "deny"})"}});
  REQUIRE(pack.has_value());
  serve::ServiceOptions options;
  options.store = &store;
  options.command_store = commands.get();
  options.pack = *pack;
  options.request_time_limit_ms = 0;               // no limit by default...
  options.tenant_time_limit_ms = {{"slow", 500}};  // ...but for tenant "slow"
  options.tokens = {{Sha256Hex("slow-token"), "slow", false},
                    {Sha256Hex("other-token"), "other", false}};
  auto service = serve::Service::Create(options);
  REQUIRE(service.has_value());
  // A proposal commits its decision record (the pack denies every tool).
  auto request = [](const std::string& path, const std::string& token) {
    return serve::ServeRequest{"POST",
                               path,
                               {{"Authorization", "Bearer " + token}},
                               R"({"conversation": "c", "call": {"id": "1", "tool": "t"}})"};
  };
  // Requests wait in the store for 800 ms: past "slow"'s 500 ms (which is
  // long enough for the same request without the wait, even under TSan).
  auto held_for_800ms = [&](const serve::ServeRequest& r) {
    store.Hold(true);
    serve::ServeResponse out;
    std::thread t([&] { out = (*service)->Handle(r); });
    store.WaitForReader();
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    store.Hold(false);
    t.join();
    return out;
  };

  serve::ServeResponse late = held_for_800ms(request("/v1/propose", "slow-token"));
  CHECK(late.status == 504);
  INFO(late.body);
  CHECK(late.body.find("\"time_limit\"") != std::string::npos);
  CHECK(late.body.find("500 ms") != std::string::npos);
  CHECK(store.Head({"slow", "c"}).value() == 0);  // the staged message was dropped

  serve::ServeResponse unlimited = held_for_800ms(request("/v1/propose", "other-token"));
  CHECK(unlimited.status == 200);
  CHECK(store.Head({"other", "c"}).value() == 1);

  // A read past the limit is 504 too; within the limit the same calls work.
  CHECK(held_for_800ms(request("/v1/render", "slow-token")).status == 504);
  CHECK((*service)->Handle(request("/v1/propose", "slow-token")).status == 200);
  CHECK(store.Head({"slow", "c"}).value() == 1);
  CHECK((*service)->Handle(request("/v1/render", "slow-token")).status == 200);

  // SetTenants (SIGHUP reading --tenants again) replaces the limits: "other"
  // is limited now, "slow" no longer.
  REQUIRE((*service)->SetTenants({{"other", serve::TenantSettings{"", 500}}}).ok());
  CHECK(held_for_800ms(request("/v1/render", "other-token")).status == 504);
  CHECK(held_for_800ms(request("/v1/render", "slow-token")).status == 200);
}

}  // namespace taskledger
