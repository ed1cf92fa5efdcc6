// ProxyMetrics and MetricsEndpoint (see taskledger/mcp_proxy/metrics.h).
#include "taskledger/mcp_proxy/metrics.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "taskledger/http/server.h"

namespace taskledger::mcp {
namespace {

constexpr std::array<const char*, 4> kDecisions = {"allow", "deny", "confirm", "require_approval"};

size_t DecisionIndex(std::string_view decision) {
  for (size_t i = 0; i < kDecisions.size(); ++i) {
    if (decision == kDecisions[i]) return i;
  }
  return 1;  // deny
}

std::string Seconds(uint64_t us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(us) / 1e6);
  return buf;
}

}  // namespace

void ProxyMetrics::RecordCall(std::string_view decision, bool forwarded, bool uncertain,
                              int64_t duration_us) {
  calls_[DecisionIndex(decision)].fetch_add(1, std::memory_order_relaxed);
  if (forwarded) forwarded_.fetch_add(1, std::memory_order_relaxed);
  if (uncertain) uncertain_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t us = duration_us > 0 ? static_cast<uint64_t>(duration_us) : 0;
  for (size_t i = 0; i < kBucketsUs.size(); ++i) {
    if (us <= static_cast<uint64_t>(kBucketsUs[i])) {
      buckets_[i].fetch_add(1, std::memory_order_relaxed);
      break;
    }
  }
  duration_sum_us_.fetch_add(us, std::memory_order_relaxed);
  duration_count_.fetch_add(1, std::memory_order_relaxed);
}

void ProxyMetrics::RecordElicitation(bool accepted) {
  (accepted ? elicited_yes_ : elicited_no_).fetch_add(1, std::memory_order_relaxed);
}

uint64_t ProxyMetrics::calls(std::string_view decision) const {
  return calls_[DecisionIndex(decision)].load(std::memory_order_relaxed);
}

std::string ProxyMetrics::Prometheus() const {
  std::string out;
  auto line = [&out](const std::string& text) { out += text + "\n"; };
  line("# HELP taskledger_mcp_calls_total Gated tools/call requests by decision.");
  line("# TYPE taskledger_mcp_calls_total counter");
  for (size_t i = 0; i < kDecisions.size(); ++i) {
    line(std::string("taskledger_mcp_calls_total{decision=\"") + kDecisions[i] + "\"} " +
         std::to_string(calls_[i].load(std::memory_order_relaxed)));
  }
  line("# HELP taskledger_mcp_calls_forwarded_total tools/call requests that reached the server.");
  line("# TYPE taskledger_mcp_calls_forwarded_total counter");
  line("taskledger_mcp_calls_forwarded_total " + std::to_string(forwarded_.load()));
  line("# HELP taskledger_mcp_calls_uncertain_total Forwarded calls whose outcome is unknown.");
  line("# TYPE taskledger_mcp_calls_uncertain_total counter");
  line("taskledger_mcp_calls_uncertain_total " + std::to_string(uncertain_.load()));
  line("# HELP taskledger_mcp_elicitations_total Confirmations asked of the user, by answer.");
  line("# TYPE taskledger_mcp_elicitations_total counter");
  line("taskledger_mcp_elicitations_total{answer=\"yes\"} " + std::to_string(elicited_yes_.load()));
  line("taskledger_mcp_elicitations_total{answer=\"no\"} " + std::to_string(elicited_no_.load()));
  line("# HELP taskledger_mcp_call_duration_seconds A gated call's time in the proxy.");
  line("# TYPE taskledger_mcp_call_duration_seconds histogram");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBucketsUs.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    line("taskledger_mcp_call_duration_seconds_bucket{le=\"" +
         Seconds(static_cast<uint64_t>(kBucketsUs[i])) + "\"} " + std::to_string(cumulative));
  }
  // A call bumps its bucket before the count, so a scrape between the two
  // would see +Inf below the last bucket: the count is never shown smaller.
  const uint64_t count = std::max(duration_count_.load(), cumulative);
  line("taskledger_mcp_call_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(count));
  line("taskledger_mcp_call_duration_seconds_sum " + Seconds(duration_sum_us_.load()));
  line("taskledger_mcp_call_duration_seconds_count " + std::to_string(count));
  return out;
}

struct MetricsEndpoint::Impl {
  http::Server server{http::ServerOptions{1 << 16, 2, 10'000, 10'000}};
  int port = 0;
  std::thread thread;
};

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(const std::string& host, int port,
                                                                const ProxyMetrics& metrics) {
  auto impl = std::make_unique<Impl>();
  impl->server.Route("GET", "/metrics", [&metrics](const http::Request&) {
    http::Response r;
    r.content_type = "text/plain; version=0.0.4";
    r.body = metrics.Prometheus();
    return r;
  });
  auto bound = impl->server.Bind(host, port);
  if (!bound) return bound.error();
  impl->port = *bound;
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { (void)raw->server.Serve(); });
  return std::unique_ptr<MetricsEndpoint>(new MetricsEndpoint(std::move(impl)));
}

MetricsEndpoint::MetricsEndpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsEndpoint::~MetricsEndpoint() {
  impl_->server.Stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int MetricsEndpoint::port() const { return impl_->port; }

}  // namespace taskledger::mcp
