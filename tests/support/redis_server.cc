// Spawning, probing and killing real redis-server processes for tests, with a
// tiny RESP client (raw sockets) so the support library needs no hiredis.
// See redis_server.h. Not thread-safe per server; SharedRedisUrl is.
#include "support/redis_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace taskledger::testing {
namespace {

using namespace std::chrono_literals;

std::string FindRedisServer() {
  if (const char* path = std::getenv("PATH")) {
    std::string_view rest = path;
    while (!rest.empty()) {
      auto colon = rest.find(':');
      std::string dir(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (dir.empty()) continue;
      std::string candidate = dir + "/redis-server";
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  if (access("/usr/bin/redis-server", X_OK) == 0) return "/usr/bin/redis-server";
  throw std::runtime_error("redis-server not found on PATH or at /usr/bin/redis-server");
}

// Asks the kernel for a free loopback port. Another process could take it
// before redis binds it; Start retries with a new port if so.
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error("could not find a free port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

int ConnectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Buffered reader of one RESP reply from a blocking socket.
class RespReader {
 public:
  explicit RespReader(int fd) : fd_(fd) {}

  std::string ReadReply() {
    std::string line = ReadLine();
    if (line.empty()) throw std::runtime_error("empty RESP line");
    char kind = line[0];
    std::string body = line.substr(1);
    switch (kind) {
      case '+':
      case ':':
        return body;
      case '-':
        return "(error) " + body;
      case '$': {
        long n = std::stol(body);
        if (n < 0) return "(nil)";
        std::string data = ReadExactly(static_cast<size_t>(n) + 2);
        return data.substr(0, static_cast<size_t>(n));
      }
      case '*': {
        long n = std::stol(body);
        if (n < 0) return "(nil)";
        std::string out;
        for (long i = 0; i < n; ++i) {
          if (i) out += '\n';
          out += ReadReply();
        }
        return out;
      }
      default:
        throw std::runtime_error("unexpected RESP reply: " + line);
    }
  }

 private:
  bool Fill() {
    char chunk[4096];
    ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }
  std::string ReadLine() {
    for (;;) {
      auto pos = buffer_.find("\r\n");
      if (pos != std::string::npos) {
        std::string line = buffer_.substr(0, pos);
        buffer_.erase(0, pos + 2);
        return line;
      }
      if (!Fill()) throw std::runtime_error("redis connection closed or timed out");
    }
  }
  std::string ReadExactly(size_t n) {
    while (buffer_.size() < n) {
      if (!Fill()) throw std::runtime_error("redis connection closed or timed out");
    }
    std::string out = buffer_.substr(0, n);
    buffer_.erase(0, n);
    return out;
  }

  int fd_;
  std::string buffer_;
};

}  // namespace

std::string RunRedisCommand(int port, const std::vector<std::string>& argv) {
  int fd = ConnectLoopback(port);
  if (fd < 0) throw std::runtime_error("cannot connect to redis on port " + std::to_string(port));
  std::string request = "*" + std::to_string(argv.size()) + "\r\n";
  for (const std::string& a : argv) request += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  std::string reply;
  try {
    size_t sent = 0;
    while (sent < request.size()) {
      ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send to redis failed");
      sent += static_cast<size_t>(n);
    }
    RespReader reader(fd);
    reply = reader.ReadReply();
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  return reply;
}

std::unique_ptr<RedisServer> RedisServer::Start(RedisServerOptions options) {
  std::unique_ptr<RedisServer> server(new RedisServer());
  server->options_ = std::move(options);
  server->binary_ = FindRedisServer();
  char tmpl[] = "/tmp/taskledger-redis-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  server->dir_ = tmpl;
  std::string last_error;
  for (int attempt = 0; attempt < 5; ++attempt) {
    server->port_ = FreePort();
    try {
      server->Spawn();
      server->WaitForPing();
      return server;
    } catch (const std::exception& e) {
      last_error = e.what();
      server->Kill9();
    }
  }
  throw std::runtime_error("redis-server did not start: " + last_error);
}

RedisServer::~RedisServer() {
  try {
    Stop();
  } catch (...) {
  }
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

std::string RedisServer::url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

std::string RedisServer::unix_url() const { return "unix://" + dir_ + "/redis.sock"; }

void RedisServer::Spawn() {
  std::vector<std::string> args = {binary_,
                                   "--port",
                                   std::to_string(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--dir",
                                   dir_,
                                   "--daemonize",
                                   "no",
                                   "--appendonly",
                                   "yes",
                                   "--appendfsync",
                                   "always",
                                   "--save",
                                   "",
                                   "--logfile",
                                   dir_ + "/redis.log"};
  if (options_.unix_socket) {
    args.insert(args.end(), {"--unixsocket", dir_ + "/redis.sock", "--unixsocketperm", "700"});
  }
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  std::vector<char*> cargv;
  cargv.reserve(args.size() + 1);
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  pid_ = pid;
}

void RedisServer::WaitForPing() {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("redis-server exited during start-up (see " + dir_ + "/redis.log)");
    }
    try {
      if (RunRedisCommand(port_, {"PING"}) == "PONG") return;
    } catch (const std::exception&) {
      // Not listening yet, or still loading the AOF.
    }
    std::this_thread::sleep_for(10ms);
  }
  throw std::runtime_error("redis-server did not answer PING within 10 s");
}

int RunWhileKilling(RedisServer& server, int workers, int kills,
                    const std::function<void(int)>& work) {
  using namespace std::chrono_literals;
  std::atomic<int> finished{0};
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(workers));
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      work(w);
      finished.fetch_add(1);
    });
  }
  int landed = 0;
  for (int round = 0; round < kills && finished.load() < workers; ++round) {
    std::this_thread::sleep_for(100ms);
    server.Kill9();
    std::this_thread::sleep_for(150ms);
    server.Restart();
    ++landed;
  }
  for (std::thread& t : threads) t.join();
  return landed;
}

void RedisServer::Kill9() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

void RedisServer::Restart() {
  Kill9();
  // The port may linger briefly; retry the spawn a few times.
  std::string last_error;
  for (int attempt = 0; attempt < 20; ++attempt) {
    try {
      Spawn();
      WaitForPing();
      return;
    } catch (const std::exception& e) {
      last_error = e.what();
      Kill9();
      std::this_thread::sleep_for(100ms);
    }
  }
  throw std::runtime_error("redis-server did not restart: " + last_error);
}

void RedisServer::Freeze() {
  if (pid_ > 0) kill(pid_, SIGSTOP);
}

void RedisServer::Thaw() {
  if (pid_ > 0) kill(pid_, SIGCONT);
}

void RedisServer::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGCONT);
  kill(pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + 5s;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(10ms);
  }
  Kill9();
}

std::string RedisServer::Run(const std::vector<std::string>& argv) const {
  return RunRedisCommand(port_, argv);
}

std::string SharedRedisUrl() {
  if (const char* env = std::getenv("TASKLEDGER_TEST_REDIS_URL"); env && *env) return env;
  static std::once_flag once;
  static std::unique_ptr<RedisServer> shared;
  std::call_once(once, [] { shared = RedisServer::Start(); });
  return shared->url();
}

}  // namespace taskledger::testing
