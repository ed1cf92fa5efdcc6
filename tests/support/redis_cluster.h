// RedisCluster: a real Redis Cluster (3 primaries + 3 replicas on loopback,
// cluster-node-timeout 1000 ms) that a test starts and stops through
// scripts/redis-cluster, so cluster tests run against the real thing:
// redirects, resharding, and a primary killed with SIGKILL.
//
// SharedRedisClusterUrl() is for tests that just need "a cluster": it returns
// $TASKLEDGER_TEST_REDIS_CLUSTER_URL if set (scripts/test starts one), else
// the URL of one cluster started per test process and stopped at its exit.
// Tests sharing it must use their own keys (unique tenants).
//
// Methods throw std::runtime_error on failure (tests only; Catch reports it).
// Thread safety: a RedisCluster is not thread-safe; SharedRedisClusterUrl is.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace taskledger::testing {

class RedisCluster {
 public:
  // Starts the cluster and waits until every node reports cluster_state:ok.
  // `aof`: appendonly yes, appendfsync always on every node.
  static std::unique_ptr<RedisCluster> Start(bool aof = false);
  ~RedisCluster();  // stops every node and removes the directory
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  const std::string& url() const { return url_; }  // redis+cluster://127.0.0.1:P1,...
  // Every node's port, the three first primaries first (as started; a
  // failover changes roles, see PrimaryPorts).
  const std::vector<int>& ports() const { return ports_; }
  // The ports of the nodes that are primaries now (ROLE on each live node).
  std::vector<int> PrimaryPorts() const;
  // The port of the primary serving `slot` now (CLUSTER SLOTS).
  int PortOfSlot(int slot) const;
  // The node id of the node on `port` (CLUSTER MYID).
  std::string NodeId(int port) const;
  // SIGKILL of the node on `port`.
  void Kill9(int port);
  // Starts a killed node again (it rejoins; as a replica if failed over).
  void Restart(int port);
  // Waits until every live node reports cluster_state:ok (throws after 30 s).
  void WaitUntilOk() const;
  // One command on the node on `port`, rendered as RedisServer::Run does.
  std::string Run(int port, const std::vector<std::string>& argv) const;

 private:
  RedisCluster() = default;
  std::string dir_;
  std::string url_;
  std::vector<int> ports_;
  std::vector<int> killed_;
};

// See the file comment.
std::string SharedRedisClusterUrl();

}  // namespace taskledger::testing
