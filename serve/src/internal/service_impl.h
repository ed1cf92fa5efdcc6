// Internal to serve/: what a Service keeps (options, the compiled
// extraction rules, readiness, metrics), the per-request context the route
// handlers receive, and the handlers themselves (conversation_routes.cc,
// read_routes.cc, command_routes.cc). Handlers return the response body as
// JSON or a Status that service.cc maps to an HTTP status and a JSON error.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "internal/provenance_cache.h"
#include "taskledger/base/status.h"
#include "taskledger/policy/call_class.h"
#include "taskledger/policy/checker.h"
#include "taskledger/render/visibility.h"
#include "taskledger/serve/service.h"
#include "taskledger/session/session.h"

namespace taskledger::serve {

// Counters /metrics reports (Prometheus text); relaxed atomics.
struct Metrics {
  std::atomic<uint64_t> requests{0};
  std::array<std::atomic<uint64_t>, 6> by_class{};  // 1xx..5xx by status / 100, [0] unused
  std::atomic<uint64_t> decisions_allow{0}, decisions_deny{0}, decisions_approval{0};
  std::atomic<uint64_t> leases{0}, outcomes{0}, conflicts_retried{0};
  std::atomic<uint64_t> provenance_hits{0}, provenance_caught_up{0}, provenance_rebuilt{0};
  std::atomic<uint64_t> latency_us_sum{0};
  // Cumulative buckets (le 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250 ms, +Inf).
  std::array<std::atomic<uint64_t>, 11> latency_buckets{};
};

// The pack a request runs under, with its compiled extraction rules and a
// pool of policy checkers for it (building one runs the pack's Lua, which
// costs more than a whole request; a checker serves one request at a time).
// A request takes its tenant's current pack when it starts and keeps it to
// its end, so a reload (Service::SetPack) never changes the pack under a
// request; the pool dies with the last request that holds the pack.
struct LoadedPack {
  std::shared_ptr<const RulePack> pack;
  std::shared_ptr<const ExtractionRules> extraction_rules;
  // pack.json "render": what /v1/render keeps out of the prompt.
  RenderVisibility visibility;

  // A checker of this pack for one request; given back with Return.
  Result<std::unique_ptr<PolicyChecker>> Borrow() const;
  void Return(std::unique_ptr<PolicyChecker> checker) const;
  // How this pack classes `tool` (PackClassOf, what its checkers' decisions
  // carry), worked out once per tool name: a request asks it before it opens
  // a session, to know whether the call may become a command.
  CallClass ClassOf(const std::string& tool) const;

 private:
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<PolicyChecker>> idle_;  // guarded by mu_
  mutable std::mutex classes_mu_;
  mutable std::unordered_map<std::string, CallClass> classes_;  // guarded by classes_mu_
};

// The packs of a service: the default one and those of named tenants, each
// with the error of its last failed reload (empty after a good one).
struct PackSlot {
  std::shared_ptr<const LoadedPack> loaded;
  std::string reload_error;
};

struct Service::Impl {
  explicit Impl(ServiceOptions o)
      : options(std::move(o)), provenance_cache(options.provenance_cache_conversations) {}
  ServiceOptions options;  // options.pack(s) are the first packs; `packs` the current ones
  // The pack `tenant`'s requests run under now: its own, or the default one;
  // null while they are refused (a pack of its own that never loaded).
  std::shared_ptr<const LoadedPack> Loaded(const std::string& tenant) const {
    std::lock_guard<std::mutex> lock(pack_mu);
    auto it = packs.find(tenant);
    return it != packs.end() ? it->second.loaded : packs.at(kDefaultPack).loaded;
  }
  // The time limit of `tenant`'s requests in ms (0: none).
  int64_t TimeLimitOf(const std::string& tenant) const {
    std::lock_guard<std::mutex> lock(pack_mu);
    auto it = time_limits.find(tenant);
    return it != time_limits.end() ? it->second : options.request_time_limit_ms;
  }
  // The key of the default pack in `packs` (not a valid tenant name).
  static constexpr const char* kDefaultPack = "";
  mutable std::mutex pack_mu;
  std::map<std::string, PackSlot> packs;       // tenant ("" default) -> pack; guarded by pack_mu
  std::map<std::string, int64_t> time_limits;  // tenant -> ms; guarded by pack_mu
  std::atomic<uint64_t> reloads{0}, reloads_failed{0};
  std::mutex inflight_mu;
  std::map<std::string, int> inflight;  // tenant -> requests running; guarded by inflight_mu
  std::atomic<bool> ready{true};
  std::atomic<uint64_t> next_worker{1};
  Metrics metrics;
  // Each conversation's provenance index as its last request left it.
  ProvenanceCache provenance_cache;
};

// One request as a handler sees it: the caller's tenant and role, the body.
struct RouteContext {
  Service::Impl& service;
  std::shared_ptr<const LoadedPack> loaded;
  std::string tenant;
  bool operator_role = false;
  const nlohmann::json& body;
  // The tenant's request time limit: past it, nothing more is committed
  // (WithSession answers DeadlineExceeded instead); max() when unlimited.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  int64_t time_limit_ms = 0;
  // Set when the request stopped at its deadline (Handle answers 504).
  bool* timed_out = nullptr;
};

// Whether ctx's deadline has passed; if so marks the request timed out and
// returns the Timeout status to answer with (nothing was committed).
Status PastDeadline(const RouteContext& ctx, const char* where);

// Loads options.pack and options.tenant_packs into `packs`, and
// options.tenant_time_limit_ms into `time_limits` (packs.cc).
Status InitPacks(Service::Impl& impl);

// /metrics text, and the bookkeeping of one answered request (metrics.cc).
std::string MetricsText(const Service::Impl& service);
void ObserveRequest(Metrics& m, int status, std::chrono::steady_clock::duration took);

// Reads a required string field; InvalidArgument names it otherwise.
Result<std::string> RequiredString(const nlohmann::json& body, const char* field);
// The conversation the body names ("conversation"), in the caller's tenant.
Result<ConversationId> ConversationOf(const RouteContext& ctx);

// Opens `id` at its head for one operation, runs `op` on it, commits what it
// staged, and does all of it again on a Conflict (another process wrote the
// conversation first). `op` returns Conflict itself to ask for a retry.
// `commands`: whether the session gets the command store, and whether its
// startup guard runs (it reads every command of the run, so only opening a
// conversation and proposing a write pay for it).
enum class CommandUse { kNone, kUnguarded, kGuarded };
Result<nlohmann::json> WithSession(const RouteContext& ctx, const ConversationId& id,
                                   CommandUse commands,
                                   const std::function<Result<nlohmann::json>(Session&)>& op);

// Route handlers (each documented in docs/openapi.yaml under its path).
Result<nlohmann::json> OpenConversation(const RouteContext& ctx);
Result<nlohmann::json> RecordMessage(const RouteContext& ctx);
Result<nlohmann::json> ProposeCall(const RouteContext& ctx);
Result<nlohmann::json> ReportOutcome(const RouteContext& ctx);
Result<nlohmann::json> EndTurn(const RouteContext& ctx);
Result<nlohmann::json> RenderState(const RouteContext& ctx);
Result<nlohmann::json> ReadVersions(const RouteContext& ctx);
Result<nlohmann::json> ReadState(const RouteContext& ctx);
Result<nlohmann::json> ReadDiff(const RouteContext& ctx);
Result<nlohmann::json> ReadDecisions(const RouteContext& ctx);
Result<nlohmann::json> ListCommands(const RouteContext& ctx);
Result<nlohmann::json> ApproveCommand(const RouteContext& ctx);
Result<nlohmann::json> DenyCommand(const RouteContext& ctx);

// The command as the API shows it.
nlohmann::json CommandJson(const Command& c);

}  // namespace taskledger::serve
