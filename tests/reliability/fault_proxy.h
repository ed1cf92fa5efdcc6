// FaultProxy: a TCP proxy on 127.0.0.1 between a client (RedisStore,
// RedisCommandStore) and a real redis-server, injecting the network faults a
// kill -9 cannot: a stalled link (requests held, so the client times out and
// the server never sees them), replies lost after the server executed the
// request (the ambiguous commit), and connections refused or reset; and
// answers held back, to show what a client sends before it has one.
//
// The mode applies to bytes moving from the moment it is set. Each accepted
// connection gets its own upstream connection and pump thread; everything
// stops and joins in the destructor. Methods are thread-safe. Tests only:
// failures to set up throw std::runtime_error.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace taskledger::testing {

class FaultProxy {
 public:
  enum class Mode {
    kPass,         // forward both ways
    kStall,        // forward nothing: requests wait unread; a client that gives
                   // up and closes loses its request with the connection
    kDropReplies,  // forward requests; when the answer comes back, drop it and
                   // reset both sides (the server did the work, the client
                   // never learns it)
    kRefuse,       // close every new and open connection at once
    kHoldReplies,  // forward requests, hold the answers unread until the mode
                   // changes (what a client sends behind a request it has no
                   // answer for yet reaches the server; what waits does not)
  };

  // Listens on a free loopback port and forwards to 127.0.0.1:upstream_port.
  static std::unique_ptr<FaultProxy> Start(int upstream_port);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return port_; }
  // redis://[userinfo@]127.0.0.1:<proxy port>
  std::string url(const std::string& userinfo = "") const;
  void SetMode(Mode mode) { mode_.store(mode); }
  Mode mode() const { return mode_.load(); }
  // Replies dropped in kDropReplies mode so far.
  int dropped_replies() const { return dropped_.load(); }

 private:
  FaultProxy() = default;
  void AcceptLoop();
  void Pump(int client, int upstream);

  int listen_fd_ = -1;
  int port_ = 0;
  int upstream_port_ = 0;
  std::atomic<Mode> mode_{Mode::kPass};
  std::atomic<bool> stopping_{false};
  std::atomic<int> dropped_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> pumps_;
};

}  // namespace taskledger::testing
