// ProxyMetrics: counters of what gating proxies did, kept in process (no
// history is re-read per scrape), and MetricsEndpoint, which serves them as
// Prometheus text (`GET /metrics`, text format 0.0.4) for
// `taskledger mcp-proxy --metrics HOST:PORT`.
//
// One ProxyMetrics may be shared by every proxy of a process (each MCP
// session of a listener): ProxyOptions::metrics. Thread-safe: counters are
// atomics, Record* and Prometheus() may run concurrently from any thread.
// Metric names (all prefixed taskledger_mcp_):
//   calls_total{decision}          gated tools/call, by the decision that held
//                                  (allow, deny, confirm, require_approval)
//   calls_forwarded_total          tools/call that reached the server
//   calls_uncertain_total          forwarded calls whose outcome is unknown
//   elicitations_total{answer}     confirmations asked of the user (yes, no)
//   call_duration_seconds          histogram of a gated call's time in the
//                                  proxy, gate and server included
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "taskledger/base/status.h"

namespace taskledger::mcp {

class ProxyMetrics {
 public:
  // Upper bounds of the duration histogram's buckets, in microseconds.
  static constexpr std::array<int64_t, 10> kBucketsUs = {100,   250,    500,    1'000,   2'500,
                                                         5'000, 10'000, 50'000, 250'000, 1'000'000};

  // One gated call: `decision` is the outcome name that held ("allow", ...);
  // anything else counts as "deny".
  void RecordCall(std::string_view decision, bool forwarded, bool uncertain, int64_t duration_us);
  void RecordElicitation(bool accepted);
  // The exposition text.
  std::string Prometheus() const;

  uint64_t calls(std::string_view decision) const;

 private:
  std::array<std::atomic<uint64_t>, 4> calls_{};  // allow, deny, confirm, require_approval
  std::atomic<uint64_t> forwarded_{0}, uncertain_{0};
  std::atomic<uint64_t> elicited_yes_{0}, elicited_no_{0};
  std::array<std::atomic<uint64_t>, kBucketsUs.size()> buckets_{};  // not cumulative
  std::atomic<uint64_t> duration_count_{0}, duration_sum_us_{0};
};

// Serves `metrics` at http://HOST:PORT/metrics on threads of its own until
// destroyed. `metrics` must outlive it.
class MetricsEndpoint {
 public:
  // Unavailable if HOST:PORT cannot be bound. Port 0 picks a free one.
  static Result<std::unique_ptr<MetricsEndpoint>> Start(const std::string& host, int port,
                                                        const ProxyMetrics& metrics);
  ~MetricsEndpoint();  // stops serving
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;
  int port() const;

  struct Impl;

 private:
  explicit MetricsEndpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace taskledger::mcp
