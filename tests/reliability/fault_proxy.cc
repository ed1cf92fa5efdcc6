// FaultProxy implementation: blocking sockets polled with short timeouts, so
// every thread notices a mode change or shutdown within ~10 ms.
#include "fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cerrno>
#include <stdexcept>

namespace taskledger::testing {
namespace {

constexpr int kPollMs = 10;

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// Closing with SO_LINGER 0 sends a reset: the peer sees the connection die
// rather than an orderly end of stream.
void Reset(int fd) {
  linger l{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close(fd);
}

bool WriteAll(int fd, const char* data, ssize_t n) {
  while (n > 0) {
    ssize_t w = send(fd, data, static_cast<size_t>(n), MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= w;
  }
  return true;
}

}  // namespace

std::unique_ptr<FaultProxy> FaultProxy::Start(int upstream_port) {
  std::unique_ptr<FaultProxy> p(new FaultProxy);
  p->upstream_port_ = upstream_port;
  p->listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (p->listen_fd_ < 0) throw std::runtime_error("FaultProxy: socket failed");
  int one = 1;
  setsockopt(p->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = Loopback(0);
  if (bind(p->listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      listen(p->listen_fd_, 64) != 0) {
    throw std::runtime_error("FaultProxy: bind/listen failed");
  }
  socklen_t len = sizeof a;
  getsockname(p->listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  p->port_ = ntohs(a.sin_port);
  p->acceptor_ = std::thread([raw = p.get()] { raw->AcceptLoop(); });
  return p;
}

FaultProxy::~FaultProxy() {
  stopping_.store(true);
  if (acceptor_.joinable()) acceptor_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (std::thread& t : pumps_) t.join();
  if (listen_fd_ >= 0) close(listen_fd_);
}

std::string FaultProxy::url(const std::string& userinfo) const {
  return "redis://" + (userinfo.empty() ? "" : userinfo + "@") +
         "127.0.0.1:" + std::to_string(port_);
}

void FaultProxy::AcceptLoop() {
  while (!stopping_.load()) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (poll(&pfd, 1, kPollMs) <= 0) continue;
    int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    if (mode_.load() == Mode::kRefuse) {
      Reset(client);
      continue;
    }
    int upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = Loopback(upstream_port_);
    if (upstream < 0 || connect(upstream, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      // The server is down: the client sees what it would see connecting directly.
      if (upstream >= 0) close(upstream);
      Reset(client);
      continue;
    }
    int one = 1;
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mu_);
    pumps_.emplace_back([this, client, upstream] { Pump(client, upstream); });
  }
}

void FaultProxy::Pump(int client, int upstream) {
  char buf[64 * 1024];
  bool open = true;
  while (open && !stopping_.load()) {
    const Mode mode = mode_.load();
    if (mode == Mode::kRefuse) break;
    if (mode == Mode::kStall) {
      // Read nothing, but notice a client that gave up and closed: its
      // request is then lost with the connection, never delivered late.
      pollfd pfd{client, POLLRDHUP, 0};
      if (poll(&pfd, 1, kPollMs) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))) break;
      continue;
    }
    const short replies = mode == Mode::kHoldReplies ? 0 : POLLIN;
    pollfd fds[2] = {{client, POLLIN, 0}, {upstream, replies, 0}};
    if (poll(fds, 2, kPollMs) <= 0) continue;
    for (int i = 0; i < 2 && open; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (mode_.load() == Mode::kStall) break;  // changed while polling: hold the bytes
      if (i == 1 && mode_.load() == Mode::kHoldReplies) continue;  // the answers wait
      const int from = i == 0 ? client : upstream;
      const int to = i == 0 ? upstream : client;
      ssize_t n = recv(from, buf, sizeof buf, 0);
      if (n <= 0) {
        open = false;
        break;
      }
      if (i == 1 && mode_.load() == Mode::kDropReplies) {
        dropped_.fetch_add(1);
        open = false;
        break;
      }
      if (!WriteAll(to, buf, n)) open = false;
    }
  }
  Reset(client);
  Reset(upstream);
}

}  // namespace taskledger::testing
