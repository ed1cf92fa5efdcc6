// HttpListener (see taskledger/mcp_proxy/http_listener.h): the Streamable
// HTTP server side. Admission checks every request makes first, the session
// table, start and stop; the endpoint's methods are in http_endpoint.cc.
#include "taskledger/mcp_proxy/http_listener.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <random>
#include <thread>
#include <vector>

#include "internal/listener_impl.h"
#include "taskledger/http/client.h"

namespace taskledger::mcp {
namespace {

using proxy_internal::SessionBridge;

// Compares without an early exit, so the time taken says nothing of where
// a guessed token first differs.
bool SameSecret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

bool LoopbackOrigin(const std::string& origin) {
  auto url = http::ParseUrl(origin);
  if (!url) return false;
  return url->host == "localhost" || url->host == "127.0.0.1" || url->host == "[::1]";
}

}  // namespace

http::Response JsonRpcError(int status, int code, const std::string& message,
                            const nlohmann::json& id) {
  http::Response r;
  r.status = status;
  r.body =
      nlohmann::json{
          {"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}}
          .dump();
  return r;
}

std::string NewSessionId() {
  std::random_device rd;
  static const char* kHex = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 4; ++i) {  // 128 bits
    uint32_t v = rd();
    for (int j = 0; j < 8; ++j) id.push_back(kHex[(v >> (j * 4)) & 0xf]);
  }
  return id;
}

HttpListener::Impl::Impl(ListenerOptions o, GatedSessionFactory f)
    : options(std::move(o)),
      factory(std::move(f)),
      server(http::ServerOptions{options.max_body_bytes, options.worker_threads, 30'000, 30'000}) {}

void HttpListener::Impl::Log(const std::string& line) const {
  if (options.log) {
    options.log(line);
  } else {
    std::cerr << "taskledger mcp-proxy: " << line << std::endl;
  }
}

http::Response HttpListener::Impl::Refuse(http::Response r) {
  std::lock_guard<std::mutex> lock(mu);
  ++report.refused;
  return r;
}

void HttpListener::Impl::Retire(const std::shared_ptr<SessionBridge>& s) {
  s->End();
  std::lock_guard<std::mutex> lock(mu);
  ++report.sessions_ended;
  std::lock_guard<std::mutex> slock(s->mu);
  if (s->report) {
    report.calls_forwarded += s->report->calls_forwarded;
    report.calls_blocked += s->report->calls_blocked;
    report.calls_uncertain += s->report->calls_uncertain;
  }
}

std::optional<http::Response> HttpListener::Impl::Admit(const http::Request& req) {
  {
    std::lock_guard<std::mutex> lock(mu);
    ++report.requests;
  }
  if (stopping) return Refuse(JsonRpcError(503, -32000, "the taskledger MCP proxy is stopping"));
  if (!options.require_token.empty()) {
    std::string auth = req.Header("Authorization");
    if (!SameSecret(auth, "Bearer " + options.require_token)) {
      auto r = JsonRpcError(401, -32001, "a valid bearer token is required");
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      return Refuse(r);
    }
  }
  if (req.Has("Origin")) {
    std::string origin = req.Header("Origin");
    bool listed = false;
    for (const std::string& o : options.allowed_origins) listed = listed || o == origin;
    if (!listed && !LoopbackOrigin(origin)) {
      return Refuse(JsonRpcError(403, -32002, "origin not allowed: " + origin));
    }
  }
  return std::nullopt;
}

std::variant<std::shared_ptr<SessionBridge>, http::Response> HttpListener::Impl::Find(
    const http::Request& req) {
  std::string id = req.Header("Mcp-Session-Id");
  if (id.empty()) {
    return Refuse(JsonRpcError(400, -32600, "missing Mcp-Session-Id: initialize first"));
  }
  std::shared_ptr<SessionBridge> s;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = sessions.find(id);
    if (it != sessions.end()) s = it->second;
  }
  bool ended = false;
  std::string version;
  if (s) {
    std::lock_guard<std::mutex> lock(s->mu);
    ended = s->ended;
    version = s->protocol_version;
    s->last_active = std::chrono::steady_clock::now();
  }
  if (s && ended) {
    size_t erased = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      erased = sessions.erase(id);
    }
    if (erased > 0) Retire(s);  // once, by whoever removed it
    s.reset();
  }
  if (!s) return Refuse(JsonRpcError(404, -32001, "unknown or ended MCP session"));
  std::string asked = req.Header("MCP-Protocol-Version");
  if (!asked.empty() && !version.empty() && asked != version) {
    return Refuse(JsonRpcError(
        400, -32600, "MCP-Protocol-Version " + asked + " is not the session's " + version));
  }
  return s;
}

HttpListener::HttpListener(ListenerOptions options, GatedSessionFactory factory)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(factory))) {
  Impl* impl = impl_.get();
  const std::string& path = impl->options.path;
  impl->server.Route("POST", path, [impl](const http::Request& r) { return impl->Post(r); });
  impl->server.Route("GET", path, [impl](const http::Request& r) { return impl->Get(r); });
  impl->server.Route("DELETE", path, [impl](const http::Request& r) { return impl->Delete(r); });
}

HttpListener::~HttpListener() {
  Stop();
  std::map<std::string, std::shared_ptr<SessionBridge>> left;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    left.swap(impl_->sessions);
  }
  for (auto& [id, s] : left) impl_->Retire(s);
}

Result<int> HttpListener::Bind() {
  return impl_->server.Bind(impl_->options.host, impl_->options.port);
}

void HttpListener::Impl::ExpireIdle() {
  const auto idle = std::chrono::milliseconds(options.idle_timeout_ms);
  // Checked a few times per timeout, so a session outlives it by a quarter at most.
  const auto tick =
      std::clamp(idle / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  std::unique_lock<std::mutex> lock(reaper_mu);
  while (!reaper_cv.wait_for(lock, tick, [this] { return stopping.load(); })) {
    std::vector<std::shared_ptr<SessionBridge>> expired;
    {
      std::lock_guard<std::mutex> table(mu);
      const auto now = std::chrono::steady_clock::now();
      for (auto it = sessions.begin(); it != sessions.end();) {
        std::lock_guard<std::mutex> slock(it->second->mu);
        if (it->second->IdleFor(idle, now)) {
          expired.push_back(it->second);
          it = sessions.erase(it);
        } else {
          ++it;
        }
      }
      report.sessions_expired += expired.size();
    }
    lock.unlock();  // Stop() must not wait for a session's grace period
    for (const auto& s : expired) {
      Log("MCP session " + s->id() + " ended: idle for " + std::to_string(options.idle_timeout_ms) +
          " ms");
      Retire(s);
    }
    lock.lock();
  }
}

Result<ListenerReport> HttpListener::Serve() {
  std::thread reaper;
  if (impl_->options.idle_timeout_ms > 0) reaper = std::thread([this] { impl_->ExpireIdle(); });
  Status served = impl_->server.Serve();
  if (reaper.joinable()) {
    impl_->WakeReaper();
    reaper.join();
  }
  // Every session ends with the listener: its proxy answers what it owes and
  // stops its server.
  std::map<std::string, std::shared_ptr<SessionBridge>> left;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    left.swap(impl_->sessions);
  }
  for (auto& [id, s] : left) impl_->Retire(s);
  if (!served.ok()) return served;
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->report;
}

void HttpListener::Impl::WakeReaper() {
  {
    std::lock_guard<std::mutex> lock(reaper_mu);
    stopping = true;
  }
  reaper_cv.notify_all();
}

void HttpListener::Stop() {
  impl_->WakeReaper();
  std::vector<std::shared_ptr<SessionBridge>> open;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (auto& [id, s] : impl_->sessions) open.push_back(s);
  }
  for (auto& s : open) s->Interrupt();  // waiting answers and streams return
  impl_->server.Stop();
}

}  // namespace taskledger::mcp
