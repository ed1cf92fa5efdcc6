// The state of an HttpListener, shared by http_listener.cc (admission,
// sessions, start and stop) and http_endpoint.cc (POST, GET and DELETE on
// the endpoint). Thread-safe as HttpListener is: `mu` guards `sessions` and
// `report`.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "internal/http_session.h"
#include "taskledger/http/server.h"
#include "taskledger/mcp_proxy/http_listener.h"

namespace taskledger::mcp {

// A JSON-RPC error as an HTTP answer.
http::Response JsonRpcError(int status, int code, const std::string& message,
                            const nlohmann::json& id = nullptr);

// 128 random bits in hex: an MCP session id.
std::string NewSessionId();

struct HttpListener::Impl {
  Impl(ListenerOptions o, GatedSessionFactory f);

  void Log(const std::string& line) const;
  // Counts `r` as refused and returns it.
  http::Response Refuse(http::Response r);
  // Ends a session and adds its proxy's report to ours.
  void Retire(const std::shared_ptr<proxy_internal::SessionBridge>& s);
  // The token and origin checks every request passes first; an answer if it
  // does not.
  std::optional<http::Response> Admit(const http::Request& req);
  // The session a request names, or the answer to give instead.
  std::variant<std::shared_ptr<proxy_internal::SessionBridge>, http::Response> Find(
      const http::Request& req);

  // Ends the sessions idle for options.idle_timeout_ms, until `stopping`
  // (the reaper thread Serve() runs).
  void ExpireIdle();
  // Sets `stopping` and wakes the reaper.
  void WakeReaper();

  // --- http_endpoint.cc -------------------------------------------------
  http::Response Post(const http::Request& req);
  http::Response Initialize(const nlohmann::json& msg, const std::string& authorization,
                            bool json_ok);
  http::Response Get(const http::Request& req);
  http::Response Delete(const http::Request& req);

  ListenerOptions options;
  GatedSessionFactory factory;
  http::Server server;
  std::atomic<bool> stopping{false};
  std::mutex mu;
  std::map<std::string, std::shared_ptr<proxy_internal::SessionBridge>> sessions;
  ListenerReport report;
  std::mutex reaper_mu;  // with reaper_cv: wakes the reaper when stopping
  std::condition_variable reaper_cv;
};

}  // namespace taskledger::mcp
