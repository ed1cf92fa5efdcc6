// Service: the Session API as HTTP/JSON requests and responses, without the
// transport (listener.h serves it over HTTP; tests and embedders may call
// Handle directly). The routes, their bodies and status codes are described
// in docs/openapi.yaml and docs/deploy.md ("The API").
//
// Stateless by construction: every request opens the conversation's Session
// at the store's head, does its one operation and commits what it staged
// before it is answered, so any process over the same store can serve the
// next request of any conversation, and a process killed between two
// requests loses nothing acknowledged. Two processes committing the same
// conversation at once meet the store's optimistic concurrency (Conflict):
// the loser waits a random time (up to 100 µs · 2^attempt, at most 6.4 ms),
// opens the new head and does its operation again (up to `conflict_retries`
// times; then 409, and nothing of that request was committed). A write under the command ledger is
// reserved, written ahead and leased by the proposal; the client runs it
// with the idempotency key and reports the outcome (Session::ProposeExternal
// and Session::ReportOutcome).
//
// Tenants: without tokens every request belongs to `default_tenant`. With
// tokens, a request needs `Authorization: Bearer <token>`; the token decides
// the tenant (401 without a known token), and approving or denying a held
// command needs an operator token (403 otherwise). Tokens are kept as
// SHA-256 digests and compared in constant time.
//
// Packs: every tenant's proposals are checked by its own pack when
// `tenant_packs` names one, by `pack` otherwise; every decision names the
// pack (name and version) that made it.
//
// Time limit: a request of a tenant with a time limit (request_time_limit_ms,
// or its entry in tenant_time_limit_ms) that is still running when the limit
// passes commits nothing more: it is answered 504 ("time_limit") and what it
// staged is dropped. The limit is checked before each commit (and before each
// conflict retry), never in the middle of one: a commit that began finishes
// and is answered normally, and a write proposal whose command was already
// written ahead is answered normally too (its lease stands; proposing the same
// call id again returns it). A read that finishes past the limit is answered
// 504 as well (it wrote nothing). Time a request waits for a worker thread
// before Handle starts is not counted.
//
// Thread-safety: Handle may be called from many threads at once; each call
// builds its own Session. The store, the command store and the pack are
// shared and must outlive the Service.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "taskledger/commands/command_store.h"
#include "taskledger/ledger/store.h"
#include "taskledger/pack/rule_pack.h"

namespace taskledger::serve {

struct ServeRequest {
  std::string method;  // "GET", "POST"
  std::string path;    // without the query string
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

struct ServeResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// A bearer token: its SHA-256 (lower-case hex; the token itself is never
// kept), the tenant it reaches, and whether it may approve and deny.
struct TokenGrant {
  std::string sha256;
  std::string tenant;
  bool operator_role = false;
};

struct ServiceOptions {
  Store* store = nullptr;                 // required
  CommandStore* command_store = nullptr;  // required: writes go through the command ledger
  std::shared_ptr<const RulePack> pack;   // required: the default pack
  // Tenants whose requests run under a pack of their own (tenant -> pack).
  std::map<std::string, std::shared_ptr<const RulePack>> tenant_packs;
  std::string default_tenant = "default";
  // Empty: no authentication (loopback development). Otherwise see the file comment.
  std::vector<TokenGrant> tokens;
  // How long a proposed write stays leased to the client before the startup
  // guard of a later request may take it back (it then becomes uncertain).
  int64_t lease_ms = 60'000;
  int conflict_retries = 16;
  // Upper bound on a request body the routes accept (the listener also
  // refuses larger bodies before reading them).
  size_t max_body_bytes = 1u << 20;
  // Requests of one tenant being answered at once; more are answered 429
  // at once (no queue), so one tenant cannot hold every worker. 0: no limit.
  int max_concurrent_per_tenant = 32;
  // Time limit of one request in ms (see the file comment); 0: none.
  int64_t request_time_limit_ms = 0;
  // Per-tenant time limits that replace request_time_limit_ms (0: none).
  std::map<std::string, int64_t> tenant_time_limit_ms;
  // Conversations whose provenance index the service keeps between requests
  // (least recently used out first), so a request on one of them does not
  // read and index its whole history again; each is used only while the
  // store's head is the one it was built for. 0: every request rebuilds the
  // index from the store. Memory: docs/deploy.md, "Provenance cache".
  size_t provenance_cache_conversations = 256;
};

// A tenant's own settings, as a line of `serve --tenants FILE` gives them.
struct TenantSettings {
  std::string rules;           // the folder of its pack; empty: the default pack
  int64_t time_limit_ms = -1;  // -1: request_time_limit_ms; 0: none
};

// A pack a service runs, as /readyz and the reload log show it.
struct PackStatus {
  std::string tenant;         // empty: the default pack
  std::string name, version;  // both empty: the tenant's requests are refused (see SetTenants)
  std::string reload_error;   // why the last reload failed; empty after a good one
};

// One route: method and exact path (docs/openapi.yaml lists the same).
struct RouteInfo {
  std::string method;
  std::string path;
};

class Service {
 public:
  // InvalidArgument when a required option is missing or a token grant is
  // malformed; the pack's errors when its extract.json does not compile.
  static Result<std::unique_ptr<Service>> Create(ServiceOptions options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Answers one request: JSON bodies; errors are {"error": {"code", "message"}}
  // with 400 (bad JSON or fields), 401, 403, 404 (unknown route, or unknown
  // command), 405, 409 (conflict, lease lost), 413, 429 (the tenant has
  // max_concurrent_per_tenant requests running), 503 (store unreachable, or the tenant's own pack
  // has not loaded), 504 (the tenant's time limit passed; nothing more was committed).
  ServeResponse Handle(const ServeRequest& request);

  // Every route Handle answers.
  static const std::vector<RouteInfo>& Routes();

  // /readyz answers 503 once this is false (draining before a shutdown).
  void SetReady(bool ready);

  // Switches to `pack` for the requests that start from now on; requests
  // already running finish on the pack they started with, and every decision
  // names its pack's version. The pack is compiled (extract.json, its Lua in
  // a checker) first: if that fails, the current pack keeps serving and the
  // error says why. Thread-safe.
  Status SetPack(std::shared_ptr<const RulePack> pack);
  // RulePack::Load(dir), then SetPack; a pack that does not load keeps the
  // current one serving (the error says why). Both count in /metrics.
  Status ReloadPack(const std::string& dir);
  // The same for the pack of `tenant` (which gets a pack of its own if it had
  // none). A failure leaves every other pack as it was.
  Status SetTenantPack(const std::string& tenant, std::shared_ptr<const RulePack> pack);
  Status ReloadTenantPack(const std::string& tenant, const std::string& dir);
  // Makes `tenants` the set of tenants with settings of their own (serve's
  // SIGHUP re-reading --tenants), for the requests that start from now on:
  // each listed pack is loaded again from its folder; time limits are the
  // listed ones; a tenant no longer listed, or listed without a pack, runs
  // under the default pack and time limit. A pack that fails to load never
  // lets its tenant fall back to the default pack: a tenant that had a pack
  // keeps it, one that had none gets 503 "pack_unavailable" until a later
  // call loads it, and Packs() says why for each. Every tenant is applied;
  // the result is the first failure (naming its tenant). Thread-safe.
  Status SetTenants(const std::map<std::string, TenantSettings>& tenants);
  // The pack new requests of `tenant` run under (the default pack unless the
  // tenant has its own; null while its requests are refused, see
  // SetTenants); pack() is the default pack.
  std::shared_ptr<const RulePack> pack() const;
  std::shared_ptr<const RulePack> PackOf(const std::string& tenant) const;
  // Every pack, the default one first, then by tenant.
  std::vector<PackStatus> Packs() const;

  struct Impl;  // serve/src/internal/service_impl.h (the route handlers share it)

 private:
  explicit Service(std::unique_ptr<Impl> impl);
  ServeResponse Readiness() const;
  std::unique_ptr<Impl> impl_;
};

// The SHA-256 hex digest a TokenGrant keeps for `token`.
std::string HashToken(std::string_view token);

}  // namespace taskledger::serve
