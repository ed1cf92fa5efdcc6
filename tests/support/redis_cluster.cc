// RedisCluster through scripts/redis-cluster; see redis_cluster.h.
#include "support/redis_cluster.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/redis_server.h"

namespace taskledger::testing {
namespace {

std::string Script() { return std::string(TASKLEDGER_SOURCE_DIR) + "/scripts/redis-cluster"; }

// Runs `command` and returns its stdout; throws if it exits non-zero.
std::string Shell(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed: " + command);
  std::string out;
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  int status = ::pclose(pipe);
  if (status != 0) throw std::runtime_error("failed (" + std::to_string(status) + "): " + command);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace

std::unique_ptr<RedisCluster> RedisCluster::Start(bool aof) {
  std::unique_ptr<RedisCluster> cluster(new RedisCluster());
  std::string pattern =
      (std::filesystem::temp_directory_path() / "taskledger-cluster-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  cluster->dir_ = pattern;
  const std::string errors = cluster->dir_ + "/start.err";
  try {
    cluster->url_ = Shell(Script() + " start " + cluster->dir_ + (aof ? " --aof" : "") +
                          " --owner " + std::to_string(::getpid()) + " 2>" + errors);
  } catch (const std::runtime_error& e) {
    // The script's message (a node's log tail when it did not start).
    std::ifstream in(errors);
    std::string why((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::error_code ignored;
    std::filesystem::remove_all(cluster->dir_, ignored);
    cluster->dir_.clear();
    throw std::runtime_error(std::string(e.what()) + ": " + why);
  }
  std::ifstream ports(cluster->dir_ + "/ports");
  for (int port = 0; ports >> port;) cluster->ports_.push_back(port);
  if (cluster->ports_.size() != 6) throw std::runtime_error("redis-cluster: expected 6 ports");
  return cluster;
}

RedisCluster::~RedisCluster() {
  if (dir_.empty()) return;
  std::string command = Script() + " stop " + dir_ + " >/dev/null 2>&1";
  (void)std::system(command.c_str());
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string RedisCluster::Run(int port, const std::vector<std::string>& argv) const {
  return RunRedisCommand(port, argv);
}

std::vector<int> RedisCluster::PrimaryPorts() const {
  std::vector<int> out;
  for (int port : ports_) {
    bool dead = false;
    for (int k : killed_) dead = dead || k == port;
    if (dead) continue;
    if (Run(port, {"ROLE"}).rfind("master", 0) == 0) out.push_back(port);
  }
  return out;
}

int RedisCluster::PortOfSlot(int slot) const {
  // CLUSTER NODES: "<id> <ip:port@bus> <flags> <primary> <ping> <pong>
  // <epoch> <link> <slot ranges...>"; importing/migrating marks are "[...]".
  for (int port : PrimaryPorts()) {
    std::istringstream nodes(Run(port, {"CLUSTER", "NODES"}));
    for (std::string line; std::getline(nodes, line);) {
      std::istringstream fields(line);
      std::vector<std::string> f;
      for (std::string x; fields >> x;) f.push_back(x);
      if (f.size() < 9 || f[2].find("master") == std::string::npos ||
          f[2].find("fail") != std::string::npos) {
        continue;
      }
      for (size_t i = 8; i < f.size(); ++i) {
        if (f[i][0] == '[') continue;
        auto dash = f[i].find('-');
        int first = std::stoi(f[i].substr(0, dash));
        int last = dash == std::string::npos ? first : std::stoi(f[i].substr(dash + 1));
        if (slot < first || slot > last) continue;
        auto colon = f[1].find(':'), at = f[1].find('@');
        return std::stoi(f[1].substr(colon + 1, at - colon - 1));
      }
    }
    return -1;  // asked one live primary: no node serves the slot
  }
  throw std::runtime_error("no live primary to ask about slot " + std::to_string(slot));
}

std::string RedisCluster::NodeId(int port) const { return Run(port, {"CLUSTER", "MYID"}); }

void RedisCluster::Kill9(int port) {
  std::ifstream pidfile(dir_ + "/nodes/" + std::to_string(port) + "/redis.pid");
  pid_t pid = 0;
  if (!(pidfile >> pid) || pid <= 0)
    throw std::runtime_error("no pid for node " + std::to_string(port));
  ::kill(pid, SIGKILL);
  killed_.push_back(port);
}

void RedisCluster::Restart(int port) {
  Shell(Script() + " restart " + dir_ + " " + std::to_string(port));
  std::erase(killed_, port);
  for (int i = 0; i < 100; ++i) {
    try {
      if (Run(port, {"PING"}) == "PONG") return;
    } catch (const std::exception&) {  // not listening yet
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("node " + std::to_string(port) + " did not restart");
}

void RedisCluster::WaitUntilOk() const {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    bool ok = true;
    for (int port : ports_) {
      bool dead = false;
      for (int k : killed_) dead = dead || k == port;
      if (dead) continue;
      ok = ok && Run(port, {"CLUSTER", "INFO"}).find("cluster_state:ok") != std::string::npos;
    }
    if (ok) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw std::runtime_error("cluster_state is not ok after 30 s");
}

std::string SharedRedisClusterUrl() {
  if (const char* env = std::getenv("TASKLEDGER_TEST_REDIS_CLUSTER_URL"); env && *env) return env;
  static std::once_flag once;
  static std::unique_ptr<RedisCluster> shared;
  std::call_once(once, [] { shared = RedisCluster::Start(); });
  return shared->url();
}

}  // namespace taskledger::testing
