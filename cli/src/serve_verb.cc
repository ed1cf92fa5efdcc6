// `taskledger serve [--rules DIR] [--store URL] [--listen HOST:PORT]
//      [--tokens FILE] [--tls-cert F --tls-key F [--tls-client-ca F]]
//      [--access-log] [--tenants FILE] [--time-limit-ms N]
//      [--provenance-cache-conversations N]` runs the Session
// API as an HTTP/JSON service (serve/service.h; the API is docs/openapi.yaml,
// the deployment docs/deploy.md). With no arguments: the memory store, 127.0.0.1:8420, and
// a built-in pack that denies every tool (pass --rules for a real one).
// `--store redis://...` makes the process stateless: any number of them over
// one Redis serve any conversation.
// Prints one line "taskledger serve: listening on http://HOST:PORT ..." to
// stderr (in one write) once it accepts connections.
// `--tenants FILE` gives tenants packs and time limits of their own (lines
// "TENANT [rules=DIR] [time-limit-ms=N]"; DIR relative to the file).
// SIGHUP loads --rules, the tenants file and every tenant's pack again: new requests run under
// the new packs, running ones finish on theirs; a pack that fails to load
// keeps its old version serving (stderr and /readyz say why), the others
// still reload.
// Exit: 0 stopped by SIGINT/SIGTERM, 2 bad usage, a broken pack or token
// file, an unreachable store, or an address that cannot be bound.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "cli_common.h"
#include "taskledger/commands/memory_command_store.h"
#include "taskledger/commands/redis_command_store.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/serve/listener.h"
#include "taskledger/serve/service.h"
#include "verbs.h"

namespace taskledger::cli {
namespace {

struct ServeOptions {
  CommonOptions common;
  std::string rules;
  std::string listen = "127.0.0.1:8420";
  std::string tokens;
  std::string tenants;
  int64_t time_limit_ms = 30'000;
  std::string tls_cert, tls_key, tls_client_ca;
  bool access_log = false;
  size_t max_body_bytes = 1u << 20;
  int threads = 8;
  int64_t lease_ms = 60'000;
  int max_concurrent_per_tenant = 32;
  size_t provenance_cache_conversations = serve::ServiceOptions{}.provenance_cache_conversations;
};

// One grant per line: "TENANT SHA256HEX [operator]"; '#' starts a comment.
Result<std::vector<serve::TokenGrant>> ReadTokens(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("cannot read the token file " + path);
  std::vector<serve::TokenGrant> grants;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    serve::TokenGrant g;
    std::string role, extra;
    if (!(fields >> g.tenant)) continue;
    fields >> g.sha256 >> role >> extra;
    if (g.sha256.size() != 64 || !extra.empty() || (!role.empty() && role != "operator")) {
      return Status::InvalidArgument(path + ":" + std::to_string(number) +
                                     ": expected \"TENANT SHA256HEX [operator]\"");
    }
    g.operator_role = role == "operator";
    grants.push_back(std::move(g));
  }
  if (grants.empty()) return Status::InvalidArgument("the token file " + path + " grants nothing");
  return grants;
}

using serve::TenantSettings;

// One tenant per line: "TENANT [rules=DIR] [time-limit-ms=N]"; '#' starts a
// comment; a relative DIR is taken from the file's folder.
Result<std::map<std::string, TenantSettings>> ReadTenants(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("cannot read the tenants file " + path);
  const std::filesystem::path base = std::filesystem::path(path).parent_path();
  std::map<std::string, TenantSettings> tenants;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::string tenant, field;
    if (!(fields >> tenant)) continue;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    if (tenants.count(tenant) != 0) {
      return Status::InvalidArgument(where + "tenant " + tenant + " is listed twice");
    }
    TenantSettings t;
    while (fields >> field) {
      if (field.rfind("rules=", 0) == 0 && field.size() > 6) {
        std::filesystem::path dir = field.substr(6);
        t.rules = (dir.is_absolute() ? dir : base / dir).lexically_normal().string();
      } else if (field.rfind("time-limit-ms=", 0) == 0 && field.size() > 14 &&
                 field.size() <= 14 + 9 &&
                 field.find_first_not_of("0123456789", 14) == std::string::npos) {
        t.time_limit_ms = std::stoll(field.substr(14));
      } else {
        return Status::InvalidArgument(
            where + "expected \"TENANT [rules=DIR] [time-limit-ms=N]\", got \"" + field + "\"");
      }
    }
    tenants[tenant] = std::move(t);
  }
  if (tenants.empty()) {
    return Status::InvalidArgument("the tenants file " + path + " names no tenant");
  }
  return tenants;
}

// Without --rules: a pack that declares no tools, so every call is denied
// (taskledger.unknown_tool). Never fail-open by default.
Result<std::shared_ptr<const RulePack>> DefaultPack() {
  return RulePack::FromFiles(
      {{"pack.json", R"({"name": "serve-default", "unknown_tools": "deny"})"}});
}

// One line on stderr for the reload of one pack (`who`: "" or " (tenant T)").
void ReportReload(const std::string& dir, const std::string& who, const Status& set,
                  const RulePack& now) {
  if (set.ok()) {
    std::cerr << ("taskledger serve: reloaded " + dir + who + ": pack " + now.name() + " " +
                  now.version() + "\n");
  } else {
    std::cerr << ("taskledger serve: reload of " + dir + who + " failed, still serving pack " +
                  now.name() + " " + now.version() + ": " + set.ToString() + "\n");
  }
}

// SIGHUP: load --rules again, read the --tenants file again (a file that no
// longer reads keeps the tenants as they were) and load every tenant's pack
// again, switching new requests to them (Service::SetTenants: a pack that
// fails keeps its current version serving, or refuses a new tenant's
// requests, and the others still switch). One line on stderr per pack.
void Reload(const ServeOptions& o, std::map<std::string, TenantSettings>& tenants,
            serve::Service& service) {
  if (o.rules.empty()) {
    std::cerr << "taskledger serve: SIGHUP: no --rules to reload; the built-in pack stays\n";
  } else {
    Status set = service.ReloadPack(o.rules);
    ReportReload(o.rules, "", set, *service.pack());
  }
  if (o.tenants.empty()) return;
  if (auto read = ReadTenants(o.tenants); read) {
    tenants = std::move(read).value();
  } else {
    std::cerr << ("taskledger serve: SIGHUP: " + read.error().ToString() +
                  "; the tenants stay as they were\n");
  }
  (void)service.SetTenants(tenants);  // each tenant's outcome is reported below
  for (const serve::PackStatus& p : service.Packs()) {
    auto t = tenants.find(p.tenant);
    if (p.tenant.empty() || t == tenants.end()) continue;
    const std::string who = t->second.rules + " (tenant " + p.tenant + ")";
    if (p.reload_error.empty()) {
      std::cerr << ("taskledger serve: reloaded " + who + ": pack " + p.name + " " + p.version +
                    "\n");
    } else if (p.name.empty()) {
      std::cerr << ("taskledger serve: reload of " + who +
                    " failed; its requests are refused (503) until a reload loads it: " +
                    p.reload_error + "\n");
    } else {
      std::cerr << ("taskledger serve: reload of " + who + " failed, still serving pack " + p.name +
                    " " + p.version + ": " + p.reload_error + "\n");
    }
  }
}

int RunServe(const ServeOptions& o) {
  std::string host;
  int port = 0;
  if (!ParseHostPort(o.listen, host, port)) {
    return ReportError("serve", Status::InvalidArgument("--listen must be HOST:PORT or PORT"));
  }
  auto pack = o.rules.empty() ? DefaultPack() : RulePack::Load(o.rules);
  if (!pack) return ReportError("cannot load rule pack " + o.rules, pack.error());
  serve::ServiceOptions options;
  options.default_tenant = o.common.tenant;
  options.lease_ms = o.lease_ms;
  options.max_body_bytes = o.max_body_bytes;
  options.max_concurrent_per_tenant = o.max_concurrent_per_tenant;
  options.request_time_limit_ms = o.time_limit_ms;
  options.provenance_cache_conversations = o.provenance_cache_conversations;
  options.pack = *pack;
  std::map<std::string, TenantSettings> tenants;
  if (!o.tenants.empty()) {
    auto read = ReadTenants(o.tenants);
    if (!read) return ReportError("serve", read.error());
    tenants = std::move(read).value();
  }
  for (const auto& [tenant, t] : tenants) {
    if (t.time_limit_ms >= 0) options.tenant_time_limit_ms[tenant] = t.time_limit_ms;
    if (t.rules.empty()) continue;
    auto own = RulePack::Load(t.rules);
    if (!own) return ReportError("cannot load the rule pack of tenant " + tenant, own.error());
    options.tenant_packs[tenant] = std::move(own).value();
  }
  if (!o.tokens.empty()) {
    auto grants = ReadTokens(o.tokens);
    if (!grants) return ReportError("serve", grants.error());
    options.tokens = std::move(grants).value();
  }
  auto store = OpenStoreOrReport(o.common);
  if (!store) return kExitUsage;
  Result<std::unique_ptr<CommandStore>> commands = Status::Internal("unset");
  if (o.common.store.empty() || o.common.store == "memory") {
    commands = NewMemoryCommandStore();
  } else {
    RedisOptions redis;
    redis.url = o.common.store;
    commands = OpenRedisCommandStore(redis);
  }
  if (!commands) return ReportError("cannot open the command store", commands.error());
  options.store = store.get();
  options.command_store = commands->get();
  auto service = serve::Service::Create(std::move(options));
  if (!service) return ReportError("serve", service.error());

  serve::ListenerOptions listen;
  listen.host = host;
  listen.port = port;
  listen.max_body_bytes = o.max_body_bytes;
  listen.worker_threads = o.threads;
  if (o.tls_cert.empty() != o.tls_key.empty() || (!o.tls_client_ca.empty() && o.tls_cert.empty())) {
    return ReportError("serve",
                       Status::InvalidArgument(
                           "--tls-cert and --tls-key go together (--tls-client-ca needs both)"));
  }
  listen.tls_cert_file = o.tls_cert;
  listen.tls_key_file = o.tls_key;
  listen.tls_client_ca_file = o.tls_client_ca;
  if (o.access_log) {
    listen.access_log = [](const serve::AccessLogLine& l) {
      std::cerr << ("access " + l.remote_addr + " " + l.method + " " + l.path + " " +
                    std::to_string(l.status) + " " + std::to_string(l.micros) + "us\n");
    };
  }
  // Signals are taken by sigwait on this thread; the server's threads inherit the mask.
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, sig);
  ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  auto listener = serve::Listener::Bind(**service, listen);
  if (!listener) return ReportError("serve", listener.error());
  std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  std::cerr << ("taskledger serve: listening on " +
                std::string(o.tls_cert.empty() ? "http" : "https") + "://" + shown + ":" +
                std::to_string((*listener)->port()) + ", store " + o.common.store + ", pack " +
                (*pack)->name() + " " + (*pack)->version() +
                (o.rules.empty() ? " (built in: every tool is denied; pass --rules DIR)" : "") +
                (o.tokens.empty() ? ", no tokens (tenant " + o.common.tenant + ")" : "") +
                (tenants.empty() ? "" : ", " + std::to_string(tenants.size()) + " tenants") + "\n")
            << std::flush;
  Status served = Status::Ok();
  std::thread serving([&listener, &served] {
    served = (*listener)->Serve();
    ::kill(::getpid(), SIGTERM);  // wakes the sigwait below if Serve ended on its own
  });
  int sig = 0;
  while (::sigwait(&signals, &sig) == 0 && sig == SIGHUP) Reload(o, tenants, **service);
  (*service)->SetReady(false);
  (*listener)->Stop();
  serving.join();
  if (!served.ok()) return ReportError("serve", served);
  std::cerr << "taskledger serve: stopped" << std::endl;
  return kExitOk;
}

}  // namespace

void AddServeVerb(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ServeOptions>();
  CLI::App* verb = app.add_subcommand("serve", "Serve the Session API over HTTP/JSON");
  AddCommonOptions(*verb, options->common);
  verb->add_option("--rules", options->rules,
                   "Rule pack folder (default: a built-in pack that denies every tool)");
  verb->add_option("--listen", options->listen, "HOST:PORT to listen on (default 127.0.0.1:8420)");
  verb->add_option("--tokens", options->tokens,
                   "Token file: lines \"TENANT SHA256HEX [operator]\" (sha256 of the token)");
  verb->add_option("--tenants", options->tenants,
                   "Tenants file: lines \"TENANT [rules=DIR] [time-limit-ms=N]\" (own pack, "
                   "own time limit)");
  verb->add_option("--time-limit-ms", options->time_limit_ms,
                   "Time limit of a request; past it nothing more is committed and it gets 504 "
                   "(0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{86'400'000}));
  verb->add_option("--tls-cert", options->tls_cert, "Serve HTTPS: PEM certificate chain file");
  verb->add_option("--tls-key", options->tls_key, "Serve HTTPS: PEM private key file");
  verb->add_option("--tls-client-ca", options->tls_client_ca,
                   "Require client certificates signed by this CA (PEM)");
  verb->add_flag("--access-log", options->access_log,
                 "Log each request to stderr (method, path, status, time; never a header)");
  verb->add_option("--max-body-bytes", options->max_body_bytes, "Largest request body");
  verb->add_option("--threads", options->threads, "Worker threads")->check(CLI::Range(1, 256));
  verb->add_option("--max-concurrent-per-tenant", options->max_concurrent_per_tenant,
                   "Requests of one tenant answered at once; more get 429 (0: no limit)");
  verb->add_option("--lease-ms", options->lease_ms,
                   "How long a proposed write stays leased to its client");
  verb->add_option("--provenance-cache-conversations", options->provenance_cache_conversations,
                   "Conversations whose provenance index is kept between requests (default "
                   "256; 0: every request rebuilds it from the store)")
      ->check(CLI::Range(size_t{0}, size_t{1'000'000}));
  verb->callback([options, &exit_code] { exit_code = RunServe(*options); });
}

}  // namespace taskledger::cli
