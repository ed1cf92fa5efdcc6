// Service (taskledger/serve/service.h): the route table, authentication,
// JSON parsing and the mapping of Status codes to HTTP statuses and JSON
// errors, health, readiness and Prometheus metrics, and WithSession, the
// open-operate-commit loop every conversation route runs in.
#include "taskledger/serve/service.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <thread>

#include "internal/service_impl.h"
#include "taskledger/base/digest.h"
#include "taskledger/base/json_depth.h"
#include "taskledger/policy/checker.h"

namespace taskledger::serve {
namespace {

using Handler = Result<nlohmann::json> (*)(const RouteContext&);

struct RouteEntry {
  const char* method;
  const char* path;
  Handler handler;  // null: answered by Handle itself (health, metrics)
  bool needs_operator;
  bool writes;  // commits (its handler checks the time limit before); else a read
};

const RouteEntry kRoutes[] = {
    {"GET", "/healthz", nullptr, false, false},
    {"GET", "/readyz", nullptr, false, false},
    {"GET", "/metrics", nullptr, false, false},
    {"POST", "/v1/open", OpenConversation, false, true},
    {"POST", "/v1/message", RecordMessage, false, true},
    {"POST", "/v1/propose", ProposeCall, false, true},
    {"POST", "/v1/outcome", ReportOutcome, false, true},
    {"POST", "/v1/end-turn", EndTurn, false, true},
    {"POST", "/v1/render", RenderState, false, false},
    {"POST", "/v1/versions", ReadVersions, false, false},
    {"POST", "/v1/state", ReadState, false, false},
    {"POST", "/v1/diff", ReadDiff, false, false},
    {"POST", "/v1/decisions", ReadDecisions, false, false},
    {"POST", "/v1/commands/list", ListCommands, false, false},
    {"POST", "/v1/commands/approve", ApproveCommand, true, true},
    {"POST", "/v1/commands/deny", DenyCommand, true, true},
};

ServeResponse JsonResponse(int status, const nlohmann::json& body) {
  ServeResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

ServeResponse Error(int status, std::string_view code, const std::string& message) {
  return JsonResponse(status, {{"error", {{"code", code}, {"message", message}}}});
}

int HttpStatusOf(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kLimitExceeded:
    case StatusCode::kDivergence:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kConflict:
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kUnavailable:
    case StatusCode::kTimeout:
      return 503;
    default:
      return 500;
  }
}

std::string HeaderOf(const ServeRequest& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (k.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < k.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(k[i])) ==
             std::tolower(static_cast<unsigned char>(name[i]));
    }
    if (same) return v;
  }
  return {};
}

bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// Gives a borrowed checker back to its pack's pool when the attempt ends.
struct CheckerLease {
  const LoadedPack& pack;
  std::unique_ptr<PolicyChecker> checker;
  ~CheckerLease() {
    if (checker) pack.Return(std::move(checker));
  }
};

}  // namespace

std::string HashToken(std::string_view token) { return Sha256Hex(token); }

Result<std::string> RequiredString(const nlohmann::json& body, const char* field) {
  auto it = body.find(field);
  if (it == body.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return Status::InvalidArgument(std::string("the field \"") + field +
                                   "\" must be a non-empty string");
  }
  if (it->get_ref<const std::string&>().size() > 512) {
    return Status::InvalidArgument(std::string("the field \"") + field +
                                   "\" is longer than 512 bytes");
  }
  return it->get<std::string>();
}

Result<ConversationId> ConversationOf(const RouteContext& ctx) {
  auto name = RequiredString(ctx.body, "conversation");
  if (!name) return name.error();
  return ConversationId{ctx.tenant, std::move(name).value()};
}

namespace {

// How long the loser of a commit race waits before it opens the new head
// again: a random time up to 100 µs · 2^attempt, at most 6.4 ms ("full
// jitter"). A fixed or only growing wait would make the loser start each
// retry later than the winner's next request, so one client of a busy
// conversation could lose every attempt and get a 409 (seen in CI under
// ASan); a random one gives every attempt an even chance to go first.
std::chrono::microseconds ConflictBackoff(int attempt) {
  thread_local std::minstd_rand random{std::random_device{}()};
  const int64_t ceiling = int64_t{100} << std::min(attempt, 6);
  return std::chrono::microseconds(std::uniform_int_distribution<int64_t>(0, ceiling)(random));
}

}  // namespace

Status PastDeadline(const RouteContext& ctx, const char* where) {
  if (std::chrono::steady_clock::now() < ctx.deadline) return Status::Ok();
  if (ctx.timed_out != nullptr) *ctx.timed_out = true;
  return Status::Timeout("the request passed this tenant's time limit of " +
                         std::to_string(ctx.time_limit_ms) + " ms " + where +
                         "; nothing more was written");
}

Result<nlohmann::json> WithSession(const RouteContext& ctx, const ConversationId& id,
                                   CommandUse commands,
                                   const std::function<Result<nlohmann::json>(Session&)>& op) {
  Service::Impl& s = ctx.service;
  Status last = Status::Conflict("no attempt made");
  // Once an attempt committed something (a write's command, written ahead
  // inside the operation), the request goes on to its answer whatever the
  // time: a 504 then would hide a lease the client holds.
  bool wrote = false;
  for (int attempt = 0; attempt <= s.options.conflict_retries; ++attempt) {
    if (attempt > 0) {
      s.metrics.conflicts_retried.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::sleep_for(ConflictBackoff(attempt));
    }
    if (!wrote) {
      if (Status late = PastDeadline(ctx, "before its commit"); !late.ok()) return late;
    }
    SessionOptions options;
    auto borrowed = ctx.loaded->Borrow();
    if (!borrowed) return borrowed.error();
    CheckerLease lease{*ctx.loaded, std::move(borrowed).value()};
    options.checker = lease.checker.get();
    options.extraction_rules = ctx.loaded->extraction_rules;
    if (commands != CommandUse::kNone) options.commands.store = s.options.command_store;
    options.commands.recover_on_open = commands == CommandUse::kGuarded;
    options.commands.lease_ms = s.options.lease_ms;
    // A worker id of its own per request: the startup guard of a later
    // request must not take back the leases this one hands out.
    options.commands.worker_id =
        "serve-" + std::to_string(::getpid()) + "-" + std::to_string(s.next_worker.fetch_add(1));
    // The index the conversation's last request left, if any: the session
    // adopts it when the head is still the one it holds, or one caught up
    // from it (a peer's turns since).
    options.provenance = s.provenance_cache.Take(id);
    const std::shared_ptr<ProvenanceCarry> carried = options.provenance;
    auto session = Session::Open(*s.options.store, id, ctx.loaded->pack, options);
    if (!session) return session.error();
    // Taken at the carried head, taken and given a peer's turns since, or
    // built from the store's history.
    const bool taken = carried && carried->index == nullptr;
    (!taken                                                   ? s.metrics.provenance_rebuilt
     : (*session)->ledger().version() > carried->head.version ? s.metrics.provenance_caught_up
                                                              : s.metrics.provenance_hits)
        .fetch_add(1, std::memory_order_relaxed);
    const uint64_t opened = (*session)->ledger().version();
    auto out = op(**session);
    wrote = wrote || (*session)->ledger().version() != opened;
    if (!out && out.error().code() == StatusCode::kConflict) {
      last = out.error();
      continue;
    }
    if (!out) return out;
    if ((*session)->ledger().has_pending()) {
      // Past the limit, what is staged is dropped.
      if (!wrote) {
        if (Status late = PastDeadline(ctx, "before its commit"); !late.ok()) return late;
      }
      auto committed = (*session)->EndTurn();
      if (!committed && committed.error().code() == StatusCode::kConflict) {
        last = committed.error();
        continue;
      }
      if (!committed) return committed.error();
    }
    nlohmann::json body = std::move(out).value();
    body["version"] = (*session)->ledger().version();
    s.provenance_cache.Put((*session)->TakeProvenance());
    return body;
  }
  return Status::Conflict("the conversation kept changing under this request (" + last.message() +
                          "); try again");
}

Service::Service(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Service::~Service() = default;

Result<std::unique_ptr<Service>> Service::Create(ServiceOptions options) {
  if (options.store == nullptr || options.command_store == nullptr || !options.pack) {
    return Status::InvalidArgument("a service needs a store, a command store and a rule pack");
  }
  for (const TokenGrant& g : options.tokens) {
    if (g.sha256.size() != 64 ||
        g.sha256.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return Status::InvalidArgument("a token grant must hold a lower-case SHA-256 hex digest");
    }
    if (g.tenant.empty()) return Status::InvalidArgument("a token grant needs a tenant");
  }
  if (options.request_time_limit_ms < 0) {
    return Status::InvalidArgument("a request time limit cannot be negative");
  }
  for (const auto& [tenant, ms] : options.tenant_time_limit_ms) {
    if (ms < 0) return Status::InvalidArgument("the time limit of " + tenant + " is negative");
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  if (Status packs = InitPacks(*impl); !packs.ok()) return packs;
  return std::unique_ptr<Service>(new Service(std::move(impl)));
}

const std::vector<RouteInfo>& Service::Routes() {
  static const std::vector<RouteInfo> routes = [] {
    std::vector<RouteInfo> out;
    for (const RouteEntry& r : kRoutes) out.push_back({r.method, r.path});
    return out;
  }();
  return routes;
}

void Service::SetReady(bool ready) { impl_->ready = ready; }

// /readyz: 503 while draining; the packs in use, and why a reload failed.
ServeResponse Service::Readiness() const {
  nlohmann::json packs = nlohmann::json::array();
  for (const PackStatus& p : Packs()) {
    nlohmann::json entry = {{"name", p.name}, {"version", p.version}};
    if (!p.tenant.empty()) entry["tenant"] = p.tenant;
    if (!p.reload_error.empty()) entry["reload_error"] = p.reload_error;
    packs.push_back(std::move(entry));
  }
  return JsonResponse(impl_->ready ? 200 : 503,
                      {{"status", impl_->ready ? "ok" : "draining"}, {"packs", std::move(packs)}});
}

ServeResponse Service::Handle(const ServeRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  ServeResponse response = [&]() -> ServeResponse {
    const RouteEntry* route = nullptr;
    bool path_known = false;
    for (const RouteEntry& r : kRoutes) {
      if (request.path != r.path) continue;
      path_known = true;
      if (request.method == r.method) route = &r;
    }
    if (!path_known) return Error(404, "not_found", "no route " + request.path);
    if (route == nullptr)
      return Error(405, "method_not_allowed", request.method + " " + request.path);
    if (route->handler == nullptr) {
      if (request.path == "/metrics") {
        ServeResponse r;
        r.content_type = "text/plain; version=0.0.4; charset=utf-8";
        r.body = MetricsText(*impl_);
        return r;
      }
      if (request.path == "/readyz") return Readiness();
      return JsonResponse(200, {{"status", "ok"}});
    }
    std::string tenant = impl_->options.default_tenant;
    bool operator_role = impl_->options.tokens.empty();
    if (!impl_->options.tokens.empty()) {
      std::string auth = HeaderOf(request, "Authorization");
      const std::string prefix = "Bearer ";
      if (auth.size() <= prefix.size() || auth.compare(0, prefix.size(), prefix) != 0) {
        return Error(401, "unauthenticated", "a bearer token is required");
      }
      const std::string digest = HashToken(std::string_view(auth).substr(prefix.size()));
      const TokenGrant* grant = nullptr;
      for (const TokenGrant& g : impl_->options.tokens) {
        if (ConstantTimeEqual(g.sha256, digest)) grant = &g;
      }
      if (grant == nullptr) return Error(401, "unauthenticated", "unknown bearer token");
      tenant = grant->tenant;
      operator_role = grant->operator_role;
    }
    // A slot among the tenant's concurrent requests, given back on return.
    struct Slot {
      Impl& impl;
      std::string tenant;
      bool held = false;
      ~Slot() {
        if (!held) return;
        std::lock_guard<std::mutex> lock(impl.inflight_mu);
        if (--impl.inflight[tenant] == 0) impl.inflight.erase(tenant);
      }
    } slot{*impl_, tenant};
    if (const int max = impl_->options.max_concurrent_per_tenant; max > 0) {
      std::lock_guard<std::mutex> lock(impl_->inflight_mu);
      int& running = impl_->inflight[tenant];
      if (running >= max) {
        if (running == 0) impl_->inflight.erase(tenant);
        return Error(429, "too_many_requests",
                     "this tenant has " + std::to_string(max) + " requests running; retry");
      }
      ++running;
      slot.held = true;
    }
    if (route->needs_operator && !operator_role) {
      return Error(403, "forbidden", "approving or denying a command needs an operator token");
    }
    if (request.body.size() > impl_->options.max_body_bytes) {
      return Error(
          413, "too_large",
          "the request body exceeds " + std::to_string(impl_->options.max_body_bytes) + " bytes");
    }
    if (JsonNestsDeeperThan(request.body, 64)) {
      return Error(400, "bad_json", "the request body nests deeper than 64 levels");
    }
    nlohmann::json body = nlohmann::json::parse(request.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return Error(400, "bad_json", "the request body must be a JSON object");
    }
    bool timed_out = false;
    auto loaded = impl_->Loaded(tenant);
    if (!loaded) {
      return Error(503, "pack_unavailable",
                   "the rule pack of tenant " + tenant + " did not load; see /readyz");
    }
    RouteContext ctx{*impl_, std::move(loaded), tenant, operator_role, body};
    ctx.timed_out = &timed_out;
    ctx.time_limit_ms = impl_->TimeLimitOf(tenant);
    if (ctx.time_limit_ms > 0) ctx.deadline = start + std::chrono::milliseconds(ctx.time_limit_ms);
    auto out = route->handler(ctx);
    if (out && !route->writes) {
      if (Status late = PastDeadline(ctx, "while reading"); !late.ok()) out = late;
    }
    if (!out && timed_out) return Error(504, "time_limit", out.error().message());
    if (!out) {
      const Status& e = out.error();
      std::string code(StatusCodeName(e.code()));
      for (char& c : code) c = c == ' ' ? '_' : c;
      return Error(HttpStatusOf(e.code()), code, e.message());
    }
    return JsonResponse(200, *out);
  }();
  ObserveRequest(impl_->metrics, response.status, std::chrono::steady_clock::now() - start);
  return response;
}

}  // namespace taskledger::serve
