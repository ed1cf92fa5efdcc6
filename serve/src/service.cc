// Service (taskledger/serve/service.h): the route table, authentication,
// JSON parsing and the mapping of Status codes to HTTP statuses and JSON
// errors, health, readiness and Prometheus metrics, and WithSession, the
// open-operate-commit loop every conversation route runs in.
#include "taskledger/serve/service.h"

#include <unistd.h>

#include <chrono>
#include <map>
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
};

const RouteEntry kRoutes[] = {
    {"GET", "/healthz", nullptr, false},
    {"GET", "/readyz", nullptr, false},
    {"GET", "/metrics", nullptr, false},
    {"POST", "/v1/open", OpenConversation, false},
    {"POST", "/v1/message", RecordMessage, false},
    {"POST", "/v1/propose", ProposeCall, false},
    {"POST", "/v1/outcome", ReportOutcome, false},
    {"POST", "/v1/end-turn", EndTurn, false},
    {"POST", "/v1/render", RenderState, false},
    {"POST", "/v1/versions", ReadVersions, false},
    {"POST", "/v1/state", ReadState, false},
    {"POST", "/v1/diff", ReadDiff, false},
    {"POST", "/v1/decisions", ReadDecisions, false},
    {"POST", "/v1/commands/list", ListCommands, false},
    {"POST", "/v1/commands/approve", ApproveCommand, true},
    {"POST", "/v1/commands/deny", DenyCommand, true},
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

// A policy checker per worker thread for the service's pack: building one
// runs the pack's Lua, which costs more than a whole request.
PolicyChecker* ThreadChecker(const std::shared_ptr<const RulePack>& pack) {
  struct Cached {
    std::shared_ptr<const RulePack> pack;
    std::unique_ptr<PolicyChecker> checker;
  };
  thread_local Cached cached;
  if (cached.pack != pack) {
    auto created = PolicyChecker::Create(pack);
    if (!created) return nullptr;
    cached.checker = std::move(created).value();
    cached.pack = pack;
  }
  return cached.checker.get();
}

// Compiles what every request needs from `pack`, and checks that its Lua
// loads, before any request may use it.
Result<std::shared_ptr<const LoadedPack>> LoadPack(std::shared_ptr<const RulePack> pack) {
  if (!pack) return Status::InvalidArgument("no rule pack");
  auto rules = CompileExtractionRules(*pack);
  if (!rules) return rules.error();
  if (auto checker = PolicyChecker::Create(pack); !checker) return checker.error();
  auto loaded = std::make_shared<LoadedPack>();
  loaded->pack = std::move(pack);
  loaded->extraction_rules = std::move(rules).value();
  return std::shared_ptr<const LoadedPack>(std::move(loaded));
}

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

Result<nlohmann::json> WithSession(const RouteContext& ctx, const ConversationId& id,
                                   CommandUse commands,
                                   const std::function<Result<nlohmann::json>(Session&)>& op) {
  Service::Impl& s = ctx.service;
  Status last = Status::Conflict("no attempt made");
  for (int attempt = 0; attempt <= s.options.conflict_retries; ++attempt) {
    if (attempt > 0) {
      s.metrics.conflicts_retried.fetch_add(1, std::memory_order_relaxed);
      // Two writers racing again at once would keep colliding: back off a little.
      std::this_thread::sleep_for(std::chrono::microseconds(100 * attempt));
    }
    SessionOptions options;
    options.checker = ThreadChecker(ctx.loaded->pack);
    if (options.checker == nullptr) return Status::Internal("the rule pack does not load");
    options.extraction_rules = ctx.loaded->extraction_rules;
    if (commands != CommandUse::kNone) options.commands.store = s.options.command_store;
    options.commands.recover_on_open = commands == CommandUse::kGuarded;
    options.commands.lease_ms = s.options.lease_ms;
    // A worker id of its own per request: the startup guard of a later
    // request must not take back the leases this one hands out.
    options.commands.worker_id =
        "serve-" + std::to_string(::getpid()) + "-" + std::to_string(s.next_worker.fetch_add(1));
    auto session = Session::Open(*s.options.store, id, ctx.loaded->pack, options);
    if (!session) return session.error();
    auto out = op(**session);
    if (!out && out.error().code() == StatusCode::kConflict) {
      last = out.error();
      continue;
    }
    if (!out) return out;
    if ((*session)->ledger().has_pending()) {
      auto committed = (*session)->EndTurn();
      if (!committed && committed.error().code() == StatusCode::kConflict) {
        last = committed.error();
        continue;
      }
      if (!committed) return committed.error();
    }
    nlohmann::json body = std::move(out).value();
    body["version"] = (*session)->ledger().version();
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
  auto loaded = LoadPack(options.pack);
  if (!loaded) return loaded.error();
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->loaded = std::move(loaded).value();
  return std::unique_ptr<Service>(new Service(std::move(impl)));
}

Status Service::SetPack(std::shared_ptr<const RulePack> pack) {
  auto loaded = LoadPack(std::move(pack));
  if (!loaded) {
    impl_->reloads_failed.fetch_add(1, std::memory_order_relaxed);
    return loaded.error();
  }
  std::lock_guard<std::mutex> lock(impl_->pack_mu);
  impl_->loaded = std::move(loaded).value();
  impl_->reloads.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status Service::ReloadPack(const std::string& dir) {
  auto pack = RulePack::Load(dir);
  if (!pack) {
    impl_->reloads_failed.fetch_add(1, std::memory_order_relaxed);
    return pack.error();
  }
  return SetPack(std::move(pack).value());
}

std::shared_ptr<const RulePack> Service::pack() const { return impl_->Loaded()->pack; }

const std::vector<RouteInfo>& Service::Routes() {
  static const std::vector<RouteInfo> routes = [] {
    std::vector<RouteInfo> out;
    for (const RouteEntry& r : kRoutes) out.push_back({r.method, r.path});
    return out;
  }();
  return routes;
}

void Service::SetReady(bool ready) { impl_->ready = ready; }

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
      if (request.path == "/readyz" && !impl_->ready) {
        return JsonResponse(503, {{"status", "draining"}});
      }
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
    RouteContext ctx{*impl_, impl_->Loaded(), tenant, operator_role, body};
    auto out = route->handler(ctx);
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
