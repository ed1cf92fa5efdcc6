// HttpUpstream (see internal/http_upstream.h): the Streamable HTTP client side
// of the proxy, bridged onto pipes.
#include "internal/http_upstream.h"

#include <fcntl.h>
#include <strings.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "internal/pipes.h"
#include "internal/process.h"
#include "taskledger/http/sse.h"

namespace taskledger::mcp::proxy_internal {
namespace {

constexpr int kInternalErrorCode = -32603;

bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         ::strncasecmp(text.data(), prefix.data(), prefix.size()) == 0;
}

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

Result<std::unique_ptr<HttpUpstream>> HttpUpstream::Start(const std::string& url,
                                                          http::Headers headers,
                                                          size_t max_message_bytes,
                                                          std::function<void(std::string)> log) {
  auto parsed = http::ParseUrl(url);
  if (!parsed) return parsed.error();
  std::unique_ptr<HttpUpstream> up(new HttpUpstream());
  up->url_ = std::move(parsed).value();
  up->headers_ = std::move(headers);
  up->max_message_bytes_ = max_message_bytes;
  up->log_ = std::move(log);
  int to_bridge[2], to_proxy[2];
  if (!MakePipe(to_bridge))
    return Status::Unavailable(std::string("pipe: ") + std::strerror(errno));
  if (!MakePipe(to_proxy)) {
    ::close(to_bridge[0]);
    ::close(to_bridge[1]);
    return Status::Unavailable(std::string("pipe: ") + std::strerror(errno));
  }
  up->bridge_reads_ = to_bridge[0];
  up->proxy_writes_ = to_bridge[1];
  up->proxy_reads_ = to_proxy[0];
  up->bridge_writes_ = to_proxy[1];
  SetNonBlocking(up->proxy_writes_);
  SetNonBlocking(up->proxy_reads_);
  HttpUpstream* self = up.get();
  up->reader_ = std::thread([self] { self->ReadLoop(); });
  return up;
}

HttpUpstream::~HttpUpstream() { Stop(0); }

std::string HttpUpstream::Describe() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string where = "at " + url_.origin + url_.path;
  return why_.empty() ? where + " is running" : where + " " + why_;
}

http::Headers HttpUpstream::RequestHeaders() {
  http::Headers h = headers_;
  h.emplace_back("Accept", "application/json, text/event-stream");
  std::lock_guard<std::mutex> lock(mu_);
  if (!session_id_.empty()) h.emplace_back("Mcp-Session-Id", session_id_);
  if (!protocol_version_.empty()) h.emplace_back("MCP-Protocol-Version", protocol_version_);
  return h;
}

std::shared_ptr<http::Client> HttpUpstream::NewClient() {
  if (stopping_) return nullptr;
  auto opened = http::Client::Open(url_.origin);
  if (!opened) return nullptr;
  std::shared_ptr<http::Client> client(std::move(opened).value());
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return nullptr;  // Stop() may already have aborted the others
  active_.insert(client);
  return client;
}

void HttpUpstream::Release(const std::shared_ptr<http::Client>& client) {
  std::lock_guard<std::mutex> lock(mu_);
  active_.erase(client);
}

void HttpUpstream::Deliver(std::string_view json_text) {
  nlohmann::json msg = nlohmann::json::parse(json_text, nullptr, false);
  if (msg.is_discarded()) {
    if (log_) log_("dropped a message from the HTTP MCP server that is not JSON");
    return;
  }
  std::vector<nlohmann::json> messages;
  if (msg.is_array()) {
    for (auto& m : msg) messages.push_back(std::move(m));
  } else {
    messages.push_back(std::move(msg));
  }
  std::lock_guard<std::mutex> lock(write_mu_);
  for (const nlohmann::json& m : messages) {
    std::string line = m.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    if (bridge_writes_ < 0 || !WriteAll(bridge_writes_, line)) return;
  }
}

void HttpUpstream::ReplyError(const nlohmann::json& id, const std::string& message) {
  Deliver(nlohmann::json{{"jsonrpc", "2.0"},
                         {"id", id},
                         {"error", {{"code", kInternalErrorCode}, {"message", message}}}}
              .dump());
}

void HttpUpstream::End(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (why_.empty()) why_ = why;
  }
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    CloseFd(bridge_writes_);
  }
  ended_ = true;
}

void HttpUpstream::ReadLoop() {
  std::string partial;
  char buf[65536];
  bool discarding = false;
  while (true) {
    ssize_t n = ::read(bridge_reads_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial.append(buf, static_cast<size_t>(n));
    size_t start = 0, nl;
    while ((nl = partial.find('\n', start)) != std::string::npos) {
      std::string line = partial.substr(start, nl - start);
      start = nl + 1;
      if (discarding) {
        discarding = false;
        continue;
      }
      nlohmann::json msg = nlohmann::json::parse(line, nullptr, false);
      if (!msg.is_object()) continue;  // the proxy sends only objects
      bool is_request = msg.contains("method") && msg.contains("id");
      if (!is_request) {
        Post(line, nullptr, false);
      } else if (msg["method"] == "initialize") {
        Post(line, msg["id"], true);
      } else {
        for (auto it = workers_.begin(); it != workers_.end();) {
          if (*it->done) {
            it->thread.join();
            it = workers_.erase(it);
          } else {
            ++it;
          }
        }
        auto done = std::make_shared<std::atomic<bool>>(false);
        nlohmann::json id = msg["id"];
        workers_.push_back(Worker{std::thread([this, line, id, done] {
                                    Post(line, id, false);
                                    *done = true;
                                  }),
                                  done});
      }
    }
    partial.erase(0, start);
    if (partial.size() > max_message_bytes_) {  // the rest of this line is dropped
      partial.clear();
      discarding = true;
    }
  }
}

void HttpUpstream::Post(const std::string& line, const nlohmann::json& id, bool initialize) {
  std::shared_ptr<http::Client> client = NewClient();
  if (!client) {
    if (!id.is_null()) ReplyError(id, "the taskledger MCP proxy is stopping");
    return;
  }
  const std::string key = id.is_null() ? "" : id.dump();
  http::SseParser sse(max_message_bytes_);
  bool is_sse = false, answered = false, too_big = false;
  int status = 0;
  std::string body;
  auto take = [&](std::string_view text) {
    nlohmann::json m = nlohmann::json::parse(text, nullptr, false);
    if (m.is_object() && !key.empty() && m.contains("id") && m["id"].dump() == key &&
        !m.contains("method")) {
      answered = true;
      if (initialize && m.contains("result") && m["result"].is_object() &&
          m["result"].contains("protocolVersion") && m["result"]["protocolVersion"].is_string()) {
        std::lock_guard<std::mutex> lock(mu_);
        protocol_version_ = m["result"]["protocolVersion"].get<std::string>();
      }
    }
    Deliver(text);
  };
  auto res = client->Send(
      "POST", url_.path, RequestHeaders(), line, "application/json",
      [&](const http::ClientResponse& head) {
        status = head.status;
        is_sse =
            status / 100 == 2 && StartsWithNoCase(head.Header("Content-Type"), "text/event-stream");
        if (initialize && status / 100 == 2) {
          std::lock_guard<std::mutex> lock(mu_);
          session_id_ = head.Header("Mcp-Session-Id");
        }
        return true;
      },
      [&](std::string_view chunk) {
        if (is_sse) {
          sse.Feed(chunk, [&](const http::SseEvent& e) {
            if (e.event == "message") take(e.data);
          });
          return true;
        }
        if (body.size() + chunk.size() > max_message_bytes_) {
          too_big = true;
          return false;
        }
        body.append(chunk);
        return true;
      });
  Release(client);
  if (stopping_) return;
  const std::string where = url_.origin + url_.path;
  if (!res) {
    if (res.error().code() == StatusCode::kUnavailable) {  // nothing was sent
      if (!id.is_null()) {
        ReplyError(id, "cannot reach the MCP server at " + where + ": " + res.error().message());
      } else if (log_) {
        log_("cannot reach the MCP server at " + where + ": " + res.error().message());
      }
    } else if (!id.is_null() && !answered) {
      End("stopped answering: " + res.error().message());
    }
    return;
  }
  bool in_session = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_session = !session_id_.empty();
  }
  if (status == 404 && !initialize && in_session) {
    if (!id.is_null()) ReplyError(id, "the MCP server at " + where + " ended the session (404)");
    End("ended the MCP session (HTTP 404)");
    return;
  }
  if (status / 100 != 2) {
    std::string detail = "the MCP server at " + where + " answered HTTP " + std::to_string(status) +
                         (body.empty() ? "" : ": " + body.substr(0, 300));
    if (!id.is_null()) {
      ReplyError(id, detail);
    } else if (log_) {
      log_(detail);
    }
    return;
  }
  if (too_big) {
    if (!id.is_null()) ReplyError(id, "the MCP server's answer is larger than the proxy accepts");
    return;
  }
  if (!is_sse && !body.empty()) take(body);
  if (!id.is_null() && !answered) {
    if (is_sse) {
      End("closed the answer's event stream before answering");
    } else {
      ReplyError(id, "the MCP server at " + where + " answered HTTP " + std::to_string(status) +
                         " without a JSON-RPC response");
    }
    return;
  }
  if (initialize && answered) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!listener_.joinable()) listener_ = std::thread([this] { ListenLoop(); });
  }
}

void HttpUpstream::ListenLoop() {
  std::string last_event_id;
  int failures = 0;
  while (!stopping_ && failures < 5) {
    std::shared_ptr<http::Client> client = NewClient();
    if (!client) return;
    http::Headers headers = RequestHeaders();
    for (auto& h : headers) {
      if (h.first == "Accept") h.second = "text/event-stream";
    }
    if (!last_event_id.empty()) headers.emplace_back("Last-Event-ID", last_event_id);
    http::SseParser sse(max_message_bytes_);
    bool is_sse = false;
    int status = 0;
    auto res = client->Send(
        "GET", url_.path, headers, "", "",
        [&](const http::ClientResponse& head) {
          status = head.status;
          is_sse =
              status == 200 && StartsWithNoCase(head.Header("Content-Type"), "text/event-stream");
          return is_sse;
        },
        [&](std::string_view chunk) {
          sse.Feed(chunk, [&](const http::SseEvent& e) {
            if (e.event == "message") Deliver(e.data);
          });
          return !stopping_;
        });
    Release(client);
    if (!sse.last_event_id().empty()) last_event_id = sse.last_event_id();
    if (stopping_) return;
    if (status == 405 || (res && !is_sse)) return;  // the server offers no such stream
    failures = res ? 0 : failures + 1;
    for (int i = 0; i < 10 && !stopping_; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

void HttpUpstream::Stop(int64_t grace_ms) {
  if (stopping_.exchange(true)) return;
  CloseFd(proxy_writes_);  // the reader sees EOF
  std::string session;
  {
    std::lock_guard<std::mutex> lock(mu_);
    session = session_id_;
  }
  if (!session.empty() && !ended_) {
    http::ClientOptions quick;
    quick.connect_timeout_ms = static_cast<int>(std::min<int64_t>(grace_ms, 2'000));
    quick.read_timeout_ms = quick.connect_timeout_ms;
    if (auto client = http::Client::Open(url_.origin, quick); client) {
      http::Headers h = headers_;
      h.emplace_back("Mcp-Session-Id", session);
      (void)(*client)->Send("DELETE", url_.path, h, "", "");
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& client : active_) client->Stop();
  }
  if (reader_.joinable()) reader_.join();
  for (Worker& w : workers_) {
    if (w.thread.joinable()) w.thread.join();
  }
  workers_.clear();
  std::thread listener;
  {
    std::lock_guard<std::mutex> lock(mu_);
    listener = std::move(listener_);
  }
  if (listener.joinable()) listener.join();
  End("was stopped by the proxy");
  CloseFd(bridge_reads_);
  CloseFd(proxy_reads_);
}

}  // namespace taskledger::mcp::proxy_internal
