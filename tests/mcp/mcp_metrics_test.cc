// The proxy's in-process metrics (taskledger/mcp_proxy/metrics.h) under
// concurrency: calls recorded on several threads while the --metrics
// endpoint's own thread serves scrapes over loopback HTTP. Every scrape is a
// valid Prometheus histogram (cumulative buckets, +Inf equal to _count), no
// counter goes backwards between scrapes, and the final totals are exact.
// Label `threads`: scripts/test also runs it under ThreadSanitizer.
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "taskledger/http/client.h"
#include "taskledger/mcp_proxy/metrics.h"

namespace taskledger {
namespace {

// name{labels} -> value, for every sample line of an exposition text.
std::map<std::string, double> Samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto space = line.rfind(' ');
    if (space == std::string::npos) continue;
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

const std::string kInf = "taskledger_mcp_call_duration_seconds_bucket{le=\"+Inf\"}";
const std::string kCount = "taskledger_mcp_call_duration_seconds_count";

// The histogram's buckets in exposition order (le ascending, +Inf last).
std::vector<double> Buckets(const std::string& text) {
  std::vector<double> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("taskledger_mcp_call_duration_seconds_bucket{", 0) == 0) {
      out.push_back(std::stod(line.substr(line.rfind(' ') + 1)));
    }
  }
  return out;
}

TEST_CASE("mcp metrics: calls recorded on many threads while scraped add up exactly",
          "[mcp][threads]") {
  mcp::ProxyMetrics metrics;
  auto endpoint = mcp::MetricsEndpoint::Start("127.0.0.1", 0, metrics);
  REQUIRE(endpoint.has_value());
  auto client = http::Client::Open("http://127.0.0.1:" + std::to_string((*endpoint)->port()));
  REQUIRE(client.has_value());

  // The writers record until the scraper has seen kScrapes scrapes, so the
  // two really overlap; each counts the calls it made.
  constexpr int kThreads = 4;
  constexpr int kScrapes = 50;
  std::atomic<bool> stop{false};
  std::array<int64_t, kThreads> made{};
  std::vector<std::thread> writers;
  writers.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&metrics, &stop, &made, t] {
      int64_t i = 0;
      for (; !stop.load(); ++i) {
        const char* decision = i % 3 == 0 ? "deny" : "allow";
        metrics.RecordCall(decision, i % 3 != 0, i % 10 == 0, (i * 37 + t) % 2'000'000);
        if (i % 100 == 0) metrics.RecordElicitation(i % 200 == 0);
      }
      made[t] = i;
    });
  }

  // Each scrape is a consistent histogram and nothing goes backwards.
  std::map<std::string, double> last;
  bool consistent = true, monotonic = true;
  for (int scrape = 0; scrape < kScrapes; ++scrape) {
    auto r = (*client)->Send("GET", "/metrics", {}, "", "");
    REQUIRE(r.has_value());
    REQUIRE(r->status == 200);
    auto now = Samples(r->body);
    std::vector<double> buckets = Buckets(r->body);
    REQUIRE(buckets.size() == mcp::ProxyMetrics::kBucketsUs.size() + 1);
    for (size_t i = 1; i < buckets.size(); ++i) consistent &= buckets[i] >= buckets[i - 1];
    consistent &= now[kInf] == now[kCount];
    for (const auto& [name, value] : last) {
      if (name != "taskledger_mcp_call_duration_seconds_sum") monotonic &= now[name] >= value;
    }
    last = std::move(now);
  }
  stop = true;
  for (auto& w : writers) w.join();
  CHECK(consistent);
  CHECK(monotonic);

  auto final_scrape = (*client)->Send("GET", "/metrics", {}, "", "");
  REQUIRE(final_scrape.has_value());
  auto total = Samples(final_scrape->body);
  // Call i of a writer: denied (and not forwarded) when i % 3 == 0,
  // uncertain when i % 10 == 0, elicited when i % 100 == 0 (yes when
  // i % 200 == 0). Ceilings, as i counts from 0.
  int64_t all = 0, denied = 0, uncertain = 0, elicited = 0, yes = 0;
  for (int64_t n : made) {
    all += n;
    denied += (n + 2) / 3;
    uncertain += (n + 9) / 10;
    elicited += (n + 99) / 100;
    yes += (n + 199) / 200;
  }
  CHECK(total["taskledger_mcp_calls_total{decision=\"deny\"}"] == static_cast<double>(denied));
  CHECK(total["taskledger_mcp_calls_total{decision=\"allow\"}"] ==
        static_cast<double>(all - denied));
  CHECK(total["taskledger_mcp_calls_forwarded_total"] == static_cast<double>(all - denied));
  CHECK(total["taskledger_mcp_calls_uncertain_total"] == static_cast<double>(uncertain));
  CHECK(total["taskledger_mcp_elicitations_total{answer=\"yes\"}"] == static_cast<double>(yes));
  CHECK(total["taskledger_mcp_elicitations_total{answer=\"no\"}"] ==
        static_cast<double>(elicited - yes));
  CHECK(total[kCount] == static_cast<double>(all));
  CHECK(total[kInf] == static_cast<double>(all));
  CHECK(metrics.calls("allow") == static_cast<uint64_t>(all - denied));
}

}  // namespace
}  // namespace taskledger
