// SessionBridge (see internal/http_session.h): one MCP session of the HTTP
// listener, its GatingProxy on a socketpair.
#include "internal/http_session.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "internal/pipes.h"

namespace taskledger::mcp::proxy_internal {

Result<std::shared_ptr<SessionBridge>> SessionBridge::Start(std::string id, GatedSession parts,
                                                            size_t replay_events) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
    return Status::Unavailable(std::string("socketpair: ") + std::strerror(errno));
  }
  std::shared_ptr<SessionBridge> b(
      new SessionBridge(std::move(id), std::move(parts), replay_events));
  b->bridge_fd_ = fds[0];
  b->proxy_fd_ = fds[1];
  b->proxy_ = std::make_unique<GatingProxy>(*b->parts_.session, b->parts_.options);
  SessionBridge* self = b.get();
  b->proxy_thread_ = std::thread([self] {
    auto run = self->proxy_->Run(self->proxy_fd_, self->proxy_fd_);
    {
      std::lock_guard<std::mutex> lock(self->mu);
      if (run) {
        self->report = run.value();
      } else {
        self->end_reason = run.error().message();
      }
    }
    // The reader sees EOF once the proxy's end is gone.
    ::shutdown(self->proxy_fd_, SHUT_RDWR);
  });
  b->reader_thread_ = std::thread([self] { self->ReadLoop(); });
  return b;
}

SessionBridge::~SessionBridge() { End(); }

bool SessionBridge::Send(const std::string& line) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (ended) return false;
  }
  std::lock_guard<std::mutex> lock(write_mu_);
  return bridge_fd_ >= 0 && WriteAll(bridge_fd_, line + "\n");
}

std::shared_ptr<Exchange> SessionBridge::Expect(const std::string& key, bool streams) {
  std::lock_guard<std::mutex> lock(mu);
  if (exchanges_.count(key) > 0) return nullptr;
  auto exchange = std::make_shared<Exchange>();
  exchange->streams = streams;
  exchanges_[key] = exchange;
  return exchange;
}

void SessionBridge::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu);
  exchanges_.erase(key);
  last_active = std::chrono::steady_clock::now();
}

void SessionBridge::Route(std::string line) {
  nlohmann::json msg = nlohmann::json::parse(line, nullptr, false);
  if (!msg.is_object()) return;  // the proxy writes only objects
  std::lock_guard<std::mutex> lock(mu);
  bool is_response = msg.contains("id") && !msg.contains("method");
  if (is_response) {
    auto it = exchanges_.find(msg["id"].dump());
    if (it != exchanges_.end() && !it->second->answer) {
      it->second->answer = std::move(line);
      cv.notify_all();
    }
    // An answer nobody waits for (its HTTP request went away) is dropped:
    // the proxy has recorded the call's outcome already.
    return;
  }
  if (!get_open) {
    for (auto& [key, exchange] : exchanges_) {
      if (exchange->streams && !exchange->answer) {
        exchange->messages.push_back(std::move(line));
        cv.notify_all();
        return;
      }
    }
  }
  events.emplace_back(next_event++, std::move(line));
  while (events.size() > replay_events_) events.pop_front();
  cv.notify_all();
}

void SessionBridge::ReadLoop() {
  std::string partial;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(bridge_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial.append(buf, static_cast<size_t>(n));
    size_t start = 0, nl;
    while ((nl = partial.find('\n', start)) != std::string::npos) {
      Route(partial.substr(start, nl - start));
      start = nl + 1;
    }
    partial.erase(0, start);
  }
  std::lock_guard<std::mutex> lock(mu);
  ended = true;
  cv.notify_all();
}

void SessionBridge::Interrupt() {
  std::lock_guard<std::mutex> lock(mu);
  interrupted = true;
  cv.notify_all();
}

void SessionBridge::End() {
  std::lock_guard<std::mutex> end_lock(end_mu_);
  if (joined_) return;
  joined_ = true;
  ::shutdown(bridge_fd_, SHUT_WR);  // the proxy's client has closed
  if (proxy_thread_.joinable()) proxy_thread_.join();
  if (reader_thread_.joinable()) reader_thread_.join();
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    ::close(bridge_fd_);
    bridge_fd_ = -1;
  }
  ::close(proxy_fd_);
  proxy_fd_ = -1;
  std::lock_guard<std::mutex> lock(mu);
  ended = true;
  cv.notify_all();
}

}  // namespace taskledger::mcp::proxy_internal
