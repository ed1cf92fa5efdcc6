// RedisServer: a real redis-server that a test starts, kills, restarts and
// stops, so store tests exercise the real thing (including kill -9 with the
// append-only file replayed on restart).
//
// Each server runs from redis-server on PATH (else /usr/bin/redis-server) on
// a free 127.0.0.1 port, in its own temp directory, with
// `--appendonly yes --appendfsync always --save ""`, optionally a unix socket,
// plus any extra arguments the test passes (ACL users, enable-debug-command).
// The process is killed when the thread that started it exits (PDEATHSIG),
// so start servers from the test's main thread. Methods throw
// std::runtime_error on failure (tests only; Catch reports it).
//
// SharedRedisUrl() is for tests that just need "a Redis": it returns
// $TASKLEDGER_TEST_REDIS_URL if set, else the URL of one server started per
// test process. Tests sharing it must use their own keys (unique tenants).
//
// Thread safety: a RedisServer is not thread-safe; SharedRedisUrl is.
#pragma once

#include <sys/types.h>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace taskledger::testing {

struct RedisServerOptions {
  bool unix_socket = false;  // also listen on <dir>/redis.sock
  std::vector<std::string>
      extra_args;  // appended to the command line, e.g. {"--enable-debug-command", "yes"}
};

class RedisServer {
 public:
  // Starts the server and waits until it answers PING.
  static std::unique_ptr<RedisServer> Start(RedisServerOptions options = {});
  ~RedisServer();  // stops the server and removes its directory
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  std::string url() const;       // redis://127.0.0.1:PORT
  std::string unix_url() const;  // unix:///DIR/redis.sock; REQUIRES options.unix_socket
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  bool running() const { return pid_ > 0; }

  // SIGKILL, no chance to flush anything beyond what appendfsync already did.
  void Kill9();
  // Starts again on the same port and directory (the AOF is replayed) and
  // waits until PING answers. Kills the current process first if running.
  void Restart();
  // SIGTERM and wait (SIGKILL after 5 s). Thaws a frozen server first.
  void Stop();
  // SIGSTOP / SIGCONT: a server that accepts connections and requests into
  // its socket buffers but answers nothing until thawed, then runs them all
  // (a slow or hung Redis, as opposed to the proxy's kStall, whose held
  // requests never arrive).
  void Freeze();
  void Thaw();

  // Runs one command over a fresh TCP connection and renders the reply:
  // "+OK" -> "OK", ":3" -> "3", bulk -> its bytes, nil -> "(nil)",
  // "-ERR x" -> "ERR x" (prefixed "(error) "), arrays -> elements joined by '\n'.
  // For test set-up (ACL SETUSER, CLIENT PAUSE, KEYS) only.
  std::string Run(const std::vector<std::string>& argv) const;

 private:
  RedisServer() = default;
  void Spawn();
  void WaitForPing();

  RedisServerOptions options_;
  std::string binary_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// Runs work(0) .. work(workers - 1), each on its own thread, while this
// thread (the one that started `server`) kills it with SIGKILL and restarts it
// (AOF replayed) up to `kills` times, each 100 ms into a round, until every
// worker has returned. Returns how many kills landed before the workers
// finished: a fault test checks that all of them did.
int RunWhileKilling(RedisServer& server, int workers, int kills,
                    const std::function<void(int)>& work);

// See the file comment.
std::string SharedRedisUrl();

// Runs one command against host:port (helper behind RedisServer::Run).
std::string RunRedisCommand(int port, const std::vector<std::string>& argv);

}  // namespace taskledger::testing
