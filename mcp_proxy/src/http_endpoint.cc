// The MCP endpoint's three methods (see taskledger/mcp_proxy/http_listener.h
// for the protocol): POST carries one message to a session's proxy and its
// answer back, as JSON or as an SSE stream; GET is the session's own SSE
// stream, with replay after Last-Event-ID; DELETE ends a session.
#include <chrono>
#include <cstdlib>

#include "internal/listener_impl.h"
#include "taskledger/http/sse.h"

namespace taskledger::mcp {
namespace {

using proxy_internal::Exchange;
using proxy_internal::SessionBridge;

constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kInternalError = -32603;

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool Accepts(const http::Request& req, std::string_view type) {
  std::string accept = req.Header("Accept");
  return accept.empty() || accept.find(type) != std::string::npos ||
         accept.find("*/*") != std::string::npos;
}

// The answer for a request whose session ended before answering it.
std::string EndedAnswer(const SessionBridge& s, const nlohmann::json& id) {
  std::string why = s.end_reason.empty() ? "the MCP session ended before answering"
                                         : "the MCP session ended: " + s.end_reason;
  return Dump(
      {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", kInternalError}, {"message", why}}}});
}

// Removes the exchange when the HTTP answer is done with, however it ends.
class ExchangeGuard {
 public:
  ExchangeGuard(std::shared_ptr<SessionBridge> session, std::string key)
      : session_(std::move(session)), key_(std::move(key)) {}
  ~ExchangeGuard() { session_->Forget(key_); }
  ExchangeGuard(const ExchangeGuard&) = delete;
  ExchangeGuard& operator=(const ExchangeGuard&) = delete;

 private:
  std::shared_ptr<SessionBridge> session_;
  std::string key_;
};

// Frees the session's GET stream slot however the answer ends (even unsent).
class StreamSlot {
 public:
  explicit StreamSlot(std::shared_ptr<SessionBridge> session) : session_(std::move(session)) {}
  ~StreamSlot() {
    std::lock_guard<std::mutex> lock(session_->mu);
    session_->get_open = false;
    session_->last_active = std::chrono::steady_clock::now();
  }
  StreamSlot(const StreamSlot&) = delete;
  StreamSlot& operator=(const StreamSlot&) = delete;

 private:
  std::shared_ptr<SessionBridge> session_;
};

}  // namespace

http::Response HttpListener::Impl::Post(const http::Request& req) {
  if (auto refused = Admit(req)) return *refused;
  if (req.Header("Content-Type").rfind("application/json", 0) != 0) {
    return Refuse(JsonRpcError(415, kInvalidRequest, "Content-Type must be application/json"));
  }
  const bool json_ok = Accepts(req, "application/json");
  const bool sse_ok = req.Has("Accept") && Accepts(req, "text/event-stream");
  if (!json_ok && !sse_ok) {
    return Refuse(JsonRpcError(406, kInvalidRequest,
                               "Accept must include application/json or text/event-stream"));
  }
  nlohmann::json msg = nlohmann::json::parse(req.body, nullptr, false);
  if (msg.is_discarded()) {
    return Refuse(JsonRpcError(400, kParseError, "parse error: the body is not valid JSON"));
  }
  if (msg.is_array()) {
    return Refuse(JsonRpcError(400, kInvalidRequest,
                               "batches are not supported: send one JSON-RPC message per POST"));
  }
  const bool has_method = msg.is_object() && msg.contains("method");
  if (!msg.is_object() || (has_method && !msg["method"].is_string()) ||
      (!has_method && !msg.contains("id"))) {
    return Refuse(JsonRpcError(400, kInvalidRequest,
                               "invalid request: expected a JSON-RPC 2.0 message object"));
  }
  const bool is_request = has_method && msg.contains("id");
  if (is_request && msg["method"] == "initialize") {
    return Initialize(msg, req.Header("Authorization"), json_ok);
  }
  auto found = Find(req);
  if (auto* answer = std::get_if<http::Response>(&found)) return *answer;
  std::shared_ptr<SessionBridge> s = std::get<std::shared_ptr<SessionBridge>>(found);
  if (!is_request) {  // a notification, or the answer to a server's request
    if (!s->Send(Dump(msg))) return Refuse(JsonRpcError(404, -32001, "the MCP session ended"));
    http::Response accepted;
    accepted.status = 202;
    return accepted;
  }
  const nlohmann::json id = msg["id"];
  const std::string key = Dump(id);
  std::shared_ptr<Exchange> exchange = s->Expect(key, sse_ok);
  if (!exchange) {
    return Refuse(
        JsonRpcError(400, kInvalidRequest, "a request with this id is still being answered", id));
  }
  auto guard = std::make_shared<ExchangeGuard>(s, key);
  if (!s->Send(Dump(msg))) return Refuse(JsonRpcError(404, -32001, "the MCP session ended"));

  if (!sse_ok) {  // one JSON answer
    std::unique_lock<std::mutex> lock(s->mu);
    s->cv.wait(lock, [&] { return exchange->answer || s->ended || s->interrupted; });
    if (!exchange->answer && s->interrupted) {
      return JsonRpcError(503, kInternalError, "the taskledger MCP proxy is stopping", id);
    }
    http::Response r;
    r.body = exchange->answer ? *exchange->answer : EndedAnswer(*s, id);
    return r;
  }
  // An SSE stream: the server's messages routed to this request, then its
  // answer; the stream ends with the answer.
  http::Response r;
  r.content_type = "text/event-stream";
  r.headers.emplace_back("Cache-Control", "no-cache");
  const auto keepalive = std::chrono::milliseconds(options.keepalive_ms);
  r.stream = [s, exchange, guard, id, keepalive](http::BodyWriter& out) {
    while (true) {
      std::deque<std::string> messages;
      std::optional<std::string> answer;
      bool idle = false;
      {
        std::unique_lock<std::mutex> lock(s->mu);
        idle = !s->cv.wait_for(lock, keepalive, [&] {
          return !exchange->messages.empty() || exchange->answer || s->ended || s->interrupted;
        });
        messages.swap(exchange->messages);
        if (exchange->answer) {
          answer = exchange->answer;
        } else if (s->ended) {
          answer = EndedAnswer(*s, id);
        } else if (s->interrupted) {
          return;
        }
      }
      if (idle && !out.Write(": keep-alive\n\n")) return;
      for (const std::string& m : messages) {
        if (!out.Write(http::FormatSseEvent(m))) return;
      }
      if (answer) {
        out.Write(http::FormatSseEvent(*answer));
        return;
      }
    }
  };
  return r;
}

http::Response HttpListener::Impl::Initialize(const nlohmann::json& msg,
                                              const std::string& authorization, bool json_ok) {
  const std::string id = NewSessionId();
  {
    std::lock_guard<std::mutex> lock(mu);
    if (sessions.size() >= options.max_sessions) {
      ++report.refused;
      return JsonRpcError(503, kInternalError,
                          "too many open MCP sessions (" + std::to_string(options.max_sessions) +
                              "); end one with DELETE",
                          msg["id"]);
    }
  }
  auto parts = factory(id, authorization);
  if (!parts) {
    Log("cannot open an MCP session: " + parts.error().message());
    return JsonRpcError(500, kInternalError,
                        "cannot open a gated session: " + parts.error().message(), msg["id"]);
  }
  auto started = SessionBridge::Start(id, std::move(parts).value(), options.replay_events);
  if (!started) {
    return JsonRpcError(500, kInternalError, started.error().message(), msg["id"]);
  }
  std::shared_ptr<SessionBridge> s = std::move(started).value();
  const std::string key = Dump(msg["id"]);
  std::shared_ptr<Exchange> exchange = s->Expect(key, false);
  std::optional<std::string> answer;
  if (s->Send(Dump(msg))) {
    std::unique_lock<std::mutex> lock(s->mu);
    s->cv.wait(lock, [&] { return exchange->answer || s->ended || s->interrupted; });
    answer = exchange->answer;
  }
  s->Forget(key);
  nlohmann::json result;
  if (answer) result = nlohmann::json::parse(*answer, nullptr, false);
  const bool ok = result.is_object() && result.contains("result");
  if (!ok) {  // no session without a successful initialize
    std::string text = answer ? *answer : [&] {
      std::lock_guard<std::mutex> lock(s->mu);
      return EndedAnswer(*s, msg["id"]);
    }();
    s->End();
    Log("an MCP session could not be initialized: " + text.substr(0, 300));
    http::Response r;
    r.status = answer ? 200 : 500;
    r.body = text;
    return r;
  }
  {
    std::lock_guard<std::mutex> lock(s->mu);
    const nlohmann::json& v = result["result"].value("protocolVersion", nlohmann::json());
    if (v.is_string()) s->protocol_version = v.get<std::string>();
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    sessions[id] = s;
    ++report.sessions_opened;
  }
  Log("MCP session " + id + " opened");
  http::Response r;
  r.headers.emplace_back("Mcp-Session-Id", id);
  if (json_ok) {
    r.body = *answer;
  } else {
    r.content_type = "text/event-stream";
    r.body = http::FormatSseEvent(*answer);
  }
  return r;
}

http::Response HttpListener::Impl::Get(const http::Request& req) {
  if (auto refused = Admit(req)) return *refused;
  if (!req.Has("Accept") || !Accepts(req, "text/event-stream")) {
    return Refuse(JsonRpcError(406, kInvalidRequest, "Accept must include text/event-stream"));
  }
  auto found = Find(req);
  if (auto* answer = std::get_if<http::Response>(&found)) return *answer;
  std::shared_ptr<SessionBridge> s = std::get<std::shared_ptr<SessionBridge>>(found);
  uint64_t cursor = 0;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->get_open) {
      return Refuse(
          JsonRpcError(409, kInvalidRequest, "this session's event stream is already open"));
    }
    s->get_open = true;
    cursor = s->delivered;
    std::string last = req.Header("Last-Event-ID");
    if (!last.empty()) {
      char* end = nullptr;
      unsigned long long n = std::strtoull(last.c_str(), &end, 10);
      if (end != nullptr && *end == '\0' && n < s->next_event) cursor = n;
    }
  }
  auto slot = std::make_shared<StreamSlot>(s);
  http::Response r;
  r.content_type = "text/event-stream";
  r.headers.emplace_back("Cache-Control", "no-cache");
  const auto keepalive = std::chrono::milliseconds(options.keepalive_ms);
  r.stream = [s, slot, cursor, keepalive](http::BodyWriter& out) mutable {
    while (true) {
      std::vector<std::pair<uint64_t, std::string>> batch;
      bool idle = false;
      {
        std::unique_lock<std::mutex> lock(s->mu);
        auto pending = [&] { return !s->events.empty() && s->events.back().first > cursor; };
        idle = !s->cv.wait_for(lock, keepalive,
                               [&] { return pending() || s->ended || s->interrupted; });
        if (s->ended || s->interrupted) return;
        for (const auto& event : s->events) {
          if (event.first > cursor) batch.push_back(event);
        }
        if (!batch.empty()) {
          cursor = batch.back().first;
          s->delivered = std::max(s->delivered, cursor);
        }
      }
      if (idle && !out.Write(": keep-alive\n\n")) return;
      for (const auto& [n, message] : batch) {
        if (!out.Write(http::FormatSseEvent(message, std::to_string(n)))) return;
      }
    }
  };
  return r;
}

http::Response HttpListener::Impl::Delete(const http::Request& req) {
  if (auto refused = Admit(req)) return *refused;
  auto found = Find(req);
  if (auto* answer = std::get_if<http::Response>(&found)) return *answer;
  std::shared_ptr<SessionBridge> s = std::get<std::shared_ptr<SessionBridge>>(found);
  size_t erased = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    erased = sessions.erase(s->id());
  }
  if (erased > 0) Retire(s);
  Log("MCP session " + s->id() + " ended by the client");
  http::Response r;
  r.body = "";
  return r;
}

}  // namespace taskledger::mcp
