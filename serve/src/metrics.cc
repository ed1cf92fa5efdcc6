// /metrics (Prometheus text exposition 0.0.4) from the counters a Service
// keeps (internal/service_impl.h), and the per-request bookkeeping behind
// them. Relaxed atomics: a scrape may see one request's counters half
// updated, never torn values.
#include <chrono>
#include <string>

#include "internal/service_impl.h"

namespace taskledger::serve {

std::string MetricsText(const Service::Impl& service) {
  const Metrics& m = service.metrics;
  std::string out;
  auto line = [&out](const std::string& name, uint64_t v) {
    out += name + " " + std::to_string(v) + "\n";
  };
  out += "# HELP taskledger_serve_requests_total Requests answered, by status class.\n";
  out += "# TYPE taskledger_serve_requests_total counter\n";
  for (int c = 1; c <= 5; ++c) {
    line("taskledger_serve_requests_total{class=\"" + std::to_string(c) + "xx\"}",
         m.by_class[c].load(std::memory_order_relaxed));
  }
  out += "# HELP taskledger_serve_decisions_total Policy decisions on proposed calls.\n";
  out += "# TYPE taskledger_serve_decisions_total counter\n";
  line("taskledger_serve_decisions_total{outcome=\"allow\"}", m.decisions_allow.load());
  line("taskledger_serve_decisions_total{outcome=\"deny\"}", m.decisions_deny.load());
  line("taskledger_serve_decisions_total{outcome=\"require_approval\"}",
       m.decisions_approval.load());
  out += "# TYPE taskledger_serve_leases_total counter\n";
  line("taskledger_serve_leases_total", m.leases.load());
  out += "# TYPE taskledger_serve_outcomes_total counter\n";
  line("taskledger_serve_outcomes_total", m.outcomes.load());
  out +=
      "# HELP taskledger_serve_conflict_retries_total Operations redone after another "
      "writer moved the conversation's head.\n";
  out += "# TYPE taskledger_serve_conflict_retries_total counter\n";
  line("taskledger_serve_conflict_retries_total", m.conflicts_retried.load());
  out +=
      "# HELP taskledger_serve_provenance_total Sessions whose provenance index came from "
      "the cache (hit), came from the cache and was given the turns another writer "
      "committed since (caught_up), or was rebuilt from the store's history (rebuilt).\n";
  out += "# TYPE taskledger_serve_provenance_total counter\n";
  line("taskledger_serve_provenance_total{index=\"hit\"}", m.provenance_hits.load());
  line("taskledger_serve_provenance_total{index=\"caught_up\"}", m.provenance_caught_up.load());
  line("taskledger_serve_provenance_total{index=\"rebuilt\"}", m.provenance_rebuilt.load());
  out += "# TYPE taskledger_serve_provenance_cached gauge\n";
  line("taskledger_serve_provenance_cached", service.provenance_cache.size());
  out += "# HELP taskledger_serve_request_seconds Time to answer a request.\n";
  out += "# TYPE taskledger_serve_request_seconds histogram\n";
  static const char* kLe[] = {"0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01",
                              "0.025",   "0.05",   "0.1",   "0.25",   "+Inf"};
  for (size_t i = 0; i < m.latency_buckets.size(); ++i) {
    line(std::string("taskledger_serve_request_seconds_bucket{le=\"") + kLe[i] + "\"}",
         m.latency_buckets[i].load());
  }
  out += "taskledger_serve_request_seconds_sum " +
         std::to_string(static_cast<double>(m.latency_us_sum.load()) / 1e6) + "\n";
  line("taskledger_serve_request_seconds_count", m.requests.load());
  out += "# HELP taskledger_serve_pack_info The rule packs new requests run under ";
  out += "(tenant=\"\": the default pack).\n";
  out += "# TYPE taskledger_serve_pack_info gauge\n";
  {
    std::lock_guard<std::mutex> lock(service.pack_mu);
    for (const auto& [tenant, slot] : service.packs) {
      if (!slot.loaded) continue;  // refused: no pack runs for this tenant
      const RulePack& p = *slot.loaded->pack;
      line("taskledger_serve_pack_info{name=\"" + p.name() + "\",version=\"" + p.version() +
               "\",tenant=\"" + tenant + "\"}",
           1);
    }
  }
  out += "# TYPE taskledger_serve_pack_reloads_total counter\n";
  line("taskledger_serve_pack_reloads_total{result=\"ok\"}", service.reloads.load());
  line("taskledger_serve_pack_reloads_total{result=\"failed\"}", service.reloads_failed.load());
  return out;
}

void ObserveRequest(Metrics& m, int status, std::chrono::steady_clock::duration took) {
  auto us =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(took).count());
  m.requests.fetch_add(1, std::memory_order_relaxed);
  if (status >= 100 && status < 600) m.by_class[status / 100].fetch_add(1);
  m.latency_us_sum.fetch_add(us, std::memory_order_relaxed);
  static const uint64_t kBoundUs[] = {250,   500,   1000,  2500,   5000,
                                      10000, 25000, 50000, 100000, 250000};
  for (size_t i = 0; i < m.latency_buckets.size(); ++i) {
    if (i == m.latency_buckets.size() - 1 || us <= kBoundUs[i]) {
      m.latency_buckets[i].fetch_add(1, std::memory_order_relaxed);
    }
  }
}

}  // namespace taskledger::serve
