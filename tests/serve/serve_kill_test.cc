// Two `taskledger serve` processes over one Redis, driven at once:
// - clients run conversations through both, and one process is killed with
//   SIGKILL mid-run; the clients retry on the other. No write runs twice (the
//   service hands out one lease per command; the retried proposal of the same
//   call gets the same lease and idempotency key), every acknowledged outcome
//   is in the store, every acknowledged version is still there.
// - two clients write the same conversation through the two processes: the
//   store's optimistic concurrency orders them, no turn lost or doubled.
// Client threads touch no Catch macro (not thread-safe); the main thread
// checks what they collected.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "serve_process.h"
#include "support/redis_server.h"

namespace taskledger::serve_test {
namespace {

using nlohmann::json;

// A client over both processes: a request that finds no answer is sent
// again to the other one (the retry a load balancer or SDK would make).
class FailoverClient {
 public:
  explicit FailoverClient(std::vector<int> ports) : ports_(std::move(ports)) {}
  // The answer of the first process that gives one; nullopt if none did.
  std::optional<Reply> Post(const std::string& path, const json& body) {
    for (int attempt = 0; attempt < 6; ++attempt) {
      size_t i = (next_ + static_cast<size_t>(attempt)) % ports_.size();
      if (!clients_[i]) {
        auto c = http::Client::Open("http://127.0.0.1:" + std::to_string(ports_[i]),
                                    http::ClientOptions{1000, 10'000, 10'000});
        if (!c) continue;
        clients_[i] = std::move(c).value();
      }
      auto r = clients_[i]->Send("POST", path, {}, body.dump(), "application/json");
      if (!r || r->status == 503) {
        clients_[i].reset();
        ++retries;
        continue;
      }
      next_ = (i + 1) % ports_.size();  // spread the next request to the other process
      Reply out{r->status, json::parse(r->body, nullptr, false), r->body};
      return out;
    }
    return std::nullopt;
  }
  int retries = 0;

 private:
  std::vector<int> ports_;
  std::map<size_t, std::unique_ptr<http::Client>> clients_;
  size_t next_ = 0;
};

// What the clients saw, for the main thread to check.
struct Seen {
  std::mutex mu;
  std::map<std::string, int> effects;       // idempotency key -> executions by a client
  std::map<std::string, uint64_t> acked;    // conversation -> highest acknowledged version
  std::map<std::string, std::string> keys;  // conversation -> the idempotency key it ran
  std::vector<std::string> failures;
  std::atomic<int> retries{0};  // requests sent again to the other process
};

void RunOne(FailoverClient& c, const std::string& conv, Seen& seen) {
  auto fail = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(seen.mu);
    seen.failures.push_back(conv + ": " + what);
  };
  auto ack = [&](const Reply& r) {
    std::lock_guard<std::mutex> lock(seen.mu);
    uint64_t& v = seen.acked[conv];
    v = std::max(v, r.body.value("version", uint64_t{0}));
  };
  const json verify = {{"id", "v"}, {"tool", "verify_identity"}, {"arguments", json::object()}};
  const json cancel = {{"id", "w"}, {"tool", "cancel_subscription"}, {"arguments", {{"id", conv}}}};
  auto read = c.Post("/v1/propose", {{"conversation", conv}, {"call", verify}});
  if (!read || read->status != 200) return fail("propose read");
  ack(*read);
  auto out = c.Post("/v1/outcome",
                    {{"conversation", conv}, {"call", verify}, {"output", {{"verified", true}}}});
  if (!out || out->status != 200) return fail("report read");
  ack(*out);
  auto write = c.Post("/v1/propose", {{"conversation", conv}, {"call", cancel}});
  if (!write || write->status != 200) return fail("propose write");
  ack(*write);
  if (!write->body.value("execute", false)) return fail("write not leased: " + write->raw);
  const json command = write->body["command"];
  {
    // The external system: counts effects per idempotency key.
    std::lock_guard<std::mutex> lock(seen.mu);
    ++seen.effects[command["idempotency_key"].get<std::string>()];
    seen.keys[conv] = command["idempotency_key"];
  }
  auto settled = c.Post("/v1/outcome", {{"conversation", conv},
                                        {"call", cancel},
                                        {"output", {{"cancelled", true}}},
                                        {"command_key", command["command_key"]},
                                        {"fencing_token", command["fencing_token"]}});
  if (!settled || settled->status != 200) return fail("report write");
  ack(*settled);
}

}  // namespace

TEST_CASE("serve: kill -9 of one of two processes over one Redis loses and repeats nothing",
          "[serve][redis][fault]") {
  auto redis = testing::RedisServer::Start();
  const std::string rules = std::string(TASKLEDGER_SOURCE_DIR) + "/rules/subscription";
  ServeProcess a({"--rules", rules, "--store", redis->url()});
  ServeProcess b({"--rules", rules, "--store", redis->url()});
  Seen seen;
  constexpr int kThreads = 4, kPerThread = 15;
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      FailoverClient c({a.port(), b.port()});
      for (int i = 0; i < kPerThread; ++i) {
        started.fetch_add(1);
        RunOne(c, "k-" + std::to_string(t) + "-" + std::to_string(i), seen);
      }
      seen.retries.fetch_add(c.retries);
    });
  }
  while (started.load() < kThreads * kPerThread / 3) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  a.Kill9();
  for (auto& th : threads) th.join();

  INFO("failures: " << seen.failures.size()
                    << (seen.failures.empty() ? "" : " first: " + seen.failures[0]));
  CHECK(seen.failures.empty());
  CHECK(seen.retries.load() > 0);  // the kill did cut clients off mid-run
  CHECK(seen.keys.size() == static_cast<size_t>(kThreads * kPerThread));
  for (const auto& [key, n] : seen.effects) {
    INFO("idempotency key " << key);
    CHECK(n >= 1);  // a retried proposal may hand the same lease out again, never a new one
  }
  CHECK(seen.effects.size() == seen.keys.size());  // one key per conversation's write
  // Everything acknowledged is in the store, as the surviving process reads it.
  for (const auto& [conv, version] : seen.acked) {
    Reply v = b.Post("/v1/versions", {{"conversation", conv}});
    REQUIRE(v.status == 200);
    CHECK(v.body["head"].get<uint64_t>() >= version);
    Reply cmds = b.Post("/v1/commands/list", {{"conversation", conv}});
    REQUIRE(cmds.status == 200);
    REQUIRE(cmds.body["commands"].size() == 1);  // one command: never reserved twice
    CHECK(cmds.body["commands"][0]["state"] == "succeeded");
    CHECK(cmds.body["commands"][0]["idempotency_key"] == seen.keys[conv]);
  }
}

TEST_CASE("serve: two processes writing one conversation lose and double no turn",
          "[serve][redis]") {
  const std::string rules = std::string(TASKLEDGER_SOURCE_DIR) + "/rules/subscription";
  const std::string url = testing::SharedRedisUrl();
  const std::string tenant = "serve-race-" + std::to_string(::getpid());
  ServeProcess a({"--rules", rules, "--store", url, "--tenant", tenant});
  ServeProcess b({"--rules", rules, "--store", url, "--tenant", tenant});
  constexpr int kEach = 40;
  std::atomic<int> ok{0}, bad{0};
  std::mutex first_bad_mu;
  std::string first_bad;  // what the first refused request was answered
  auto writer = [&](int port, int who) {
    auto c = http::Client::Open("http://127.0.0.1:" + std::to_string(port));
    if (!c) return;
    for (int i = 0; i < kEach; ++i) {
      // Each message extracts an identifier, so each is one committed turn.
      json body = {{"conversation", "race"},
                   {"text", "my mail is u" + std::to_string(who) + "x" + std::to_string(i) +
                                "@example.com"}};
      // A 409 (the race was lost on every retry) committed nothing and
      // says "try again": a client does, and the turn must then land once.
      auto r = (*c)->Send("POST", "/v1/message", {}, body.dump(), "application/json");
      for (int again = 0; again < 4 && r && r->status == 409; ++again) {
        r = (*c)->Send("POST", "/v1/message", {}, body.dump(), "application/json");
      }
      if (r && r->status == 200) {
        ok.fetch_add(1);
        continue;
      }
      bad.fetch_add(1);
      std::lock_guard<std::mutex> lock(first_bad_mu);
      if (first_bad.empty()) {
        first_bad = r ? std::to_string(r->status) + " " + r->body : r.error().message();
      }
    }
  };
  std::thread t1(writer, a.port(), 1), t2(writer, b.port(), 2);
  t1.join();
  t2.join();
  INFO("first refused request: " << first_bad);
  CHECK(bad.load() == 0);
  CHECK(ok.load() == 2 * kEach);
  Reply v = a.Post("/v1/versions", {{"conversation", "race"}});
  REQUIRE(v.status == 200);
  CHECK(v.body["head"] == 2 * kEach);  // one version per acknowledged message
  std::set<std::string> texts;
  for (const json& t : v.body["turns"]) {
    REQUIRE(t["updates"].size() == 1);
    texts.insert(t["updates"][0]["value"].dump());
  }
  CHECK(texts.size() == static_cast<size_t>(2 * kEach));
}

}  // namespace taskledger::serve_test
