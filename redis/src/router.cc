// RedisRouter: opening (which kind of URL, is the server a cluster node),
// the slot map and its refresh, per-node pools, and the calls that go to one
// key or to every primary. The multi-key batch with its redirect handling
// is in router_batch.cc. See taskledger/redis/router.h. Thread-safe.
#include "taskledger/redis/router.h"

#include <algorithm>
#include <thread>
#include <utility>

namespace taskledger::internal {
namespace {

std::vector<std::string_view> Views(const Argv& argv) {
  return std::vector<std::string_view>(argv.begin(), argv.end());
}

}  // namespace

ClusterReply ClassifyClusterReply(const Reply& reply) {
  if (!reply.is_error()) return ClusterReply::kRan;
  const std::string_view text = reply.str();
  if (text.starts_with("MOVED ")) return ClusterReply::kMoved;
  if (text.starts_with("ASK ")) return ClusterReply::kAsk;
  if (text.starts_with("TRYAGAIN") || text.starts_with("CLUSTERDOWN")) return ClusterReply::kBusy;
  return ClusterReply::kRan;
}

RedisRouter::RedisRouter(RedisEndpoint credentials, std::vector<RedisEndpoint> seeds,
                         const RouterOptions& options)
    : cluster_(!seeds.empty()),
      options_(options),
      credentials_(std::move(credentials)),
      seeds_(std::move(seeds)) {
  if (!cluster_) single_ = std::make_unique<RedisPool>(credentials_, options_.client);
}

RedisRouter::~RedisRouter() = default;

Result<std::unique_ptr<RedisRouter>> RedisRouter::Open(std::string_view url,
                                                       const RouterOptions& options) {
  std::vector<RedisEndpoint> seeds;
  RedisEndpoint credentials;
  if (IsClusterUrl(url)) {
    auto parsed = ParseClusterUrl(url);
    if (!parsed) return parsed.error();
    seeds = std::move(parsed.value());
    credentials = seeds.front();
  } else {
    auto parsed = ParseRedisUrl(url);
    if (!parsed) return parsed.error();
    credentials = std::move(parsed.value());
  }
  std::unique_ptr<RedisRouter> router(new RedisRouter(credentials, std::move(seeds), options));
  if (!router->cluster_ && !credentials.unix_socket && credentials.db == 0) {
    // A plain URL may point at a cluster node: one CLUSTER SLOTS at open
    // tells (on the connection the store goes on to use). A server without
    // cluster support, or a user not allowed to ask, answers an error and
    // stays a single server.
    auto slots = router->single_->Take()->Command({"CLUSTER", "SLOTS"});
    if (!slots) return slots.error();
    if (slots->is_array()) {
      router->cluster_ = true;
      router->seeds_.push_back(credentials);
      router->single_.reset();
    }
  }
  if (router->cluster_) {
    if (Status s = router->Refresh(); !s.ok()) return s;
  }
  return router;
}

RedisPool& RedisRouter::PoolOf(const ClusterNode& node) {
  std::lock_guard lock(mu_);
  auto& pool = pools_[node.Address()];
  if (!pool) {
    RedisEndpoint ep = credentials_;
    ep.host = node.host;
    ep.port = node.port;
    pool = std::make_unique<RedisPool>(std::move(ep), options_.client);
  }
  return *pool;
}

std::shared_ptr<const Topology> RedisRouter::Map() {
  bool refresh = false;
  {
    std::lock_guard lock(mu_);
    refresh = stale_ || !map_;
  }
  // A failed refresh keeps the old map: its owners are retried (and
  // refused, or redirected) until the call's time is up.
  if (refresh) (void)Refresh();
  std::lock_guard lock(mu_);
  return map_;
}

Status RedisRouter::Refresh() {
  std::vector<ClusterNode> candidates;
  {
    std::lock_guard lock(mu_);
    if (map_) candidates = map_->primaries;
  }
  for (const RedisEndpoint& seed : seeds_) candidates.push_back({seed.host, seed.port, {}});
  Status last = Status::Unavailable("redis cluster: no node to ask for the slot map");
  for (const ClusterNode& node : candidates) {
    auto reply = PoolOf(node).Take()->Command({"CLUSTER", "SLOTS"});
    if (!reply) {
      last = reply.error();
      continue;
    }
    if (reply->is_error()) {
      last = ServerErrorToStatus(*reply, "redis " + node.Address() + ": CLUSTER SLOTS");
      continue;
    }
    auto map = ParseClusterSlots(*reply, node.host);
    if (!map) return map.error();
    auto topology = std::make_shared<Topology>();
    static_cast<SlotMap&>(*topology) = std::move(map.value());
    for (const ClusterNode& primary : topology->primaries) {
      topology->pools.push_back(&PoolOf(primary));
    }
    std::lock_guard lock(mu_);
    map_ = std::move(topology);
    stale_ = false;
    return Status::Ok();
  }
  return last;
}

void RedisRouter::NodeFailed(const ClusterNode& node) {
  PoolOf(node).Clear();
  std::lock_guard lock(mu_);
  stale_ = true;
}

size_t RedisRouter::primaries() {
  if (!cluster_) return 1;
  auto map = Map();
  return map ? map->primaries.size() : 0;
}

Status RedisRouter::EnsureLoaded(const FunctionLibrary& library) {
  if (!cluster_) return single_->Take()->EnsureLoaded(library);
  // On every primary (replicas get it by replication); one that is failing
  // over is waited for, and loading again is harmless (ForEachPrimary).
  return ForEachPrimary([&](RedisClient& client) { return client.EnsureLoaded(library); });
}

Status RedisRouter::ForEachPrimary(const std::function<Status(RedisClient&)>& fn,
                                   Coverage coverage) {
  if (!cluster_) return fn(*single_->Take());
  const auto deadline = std::chrono::steady_clock::now() + options_.cluster_timeout;
  auto backoff = std::chrono::milliseconds(10);
  while (true) {
    auto map = Map();
    if (!map) return Status::Unavailable("redis cluster: no slot map");
    Status unreachable;
    // A slot no primary serves holds keys no primary would show: wait for
    // the cluster to cover it (a failover under way) rather than answer
    // without them.
    if (size_t slot = coverage == Coverage::kEverySlot ? map->FirstUnservedSlot() : kClusterSlots;
        slot < kClusterSlots) {
      std::lock_guard lock(mu_);
      stale_ = true;
      unreachable = Status::Unavailable("redis cluster: slot " + std::to_string(slot) +
                                        " is served by no primary");
    }
    for (size_t i = 0; i < map->primaries.size() && unreachable.ok(); ++i) {
      auto client = map->pools[i]->Take();
      client->DropIfClosed();
      // A primary that cannot be reached (failing over), or whose address
      // now answers as another node (a server started on a failed primary's
      // port), is waited for, and the round starts over on the map read anew.
      if (Status c = ConnectTo(*client, map->primaries[i]); !c.ok()) {
        NodeFailed(map->primaries[i]);
        unreachable = c;
        continue;
      }
      Status s = fn(*client);
      if (s.code() == StatusCode::kUnavailable) {  // died under us: same as above
        NodeFailed(map->primaries[i]);
        unreachable = s;
        continue;
      }
      if (s.code() == StatusCode::kTimeout) NodeFailed(map->primaries[i]);
      if (!s.ok()) return s;
    }
    if (unreachable.ok()) return Status::Ok();
    if (std::chrono::steady_clock::now() >= deadline) return unreachable;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
}

Status RedisRouter::ConnectTo(RedisClient& client, const ClusterNode& node) {
  if (Status c = client.Connect(); !c.ok()) return c;
  // A connection, once confirmed, stays with the server it reached; a new
  // one (or one opened by a path that does not confirm, like Refresh) may
  // reach whatever listens on the address now.
  if (node.id.empty() || client.confirmed_node() == node.id) return Status::Ok();
  auto reply = client.Command({"CLUSTER", "MYID"});
  if (!reply) return reply.error();
  const std::string& text = reply->str();
  // A server that cannot answer cannot be confirmed, and is not refused for
  // it: a user without `cluster|myid` (ACL rules written before this check;
  // a stranger would not have known its password), or a deployment that
  // does not offer the subcommand.
  const bool cannot_confirm =
      reply->is_error() && (text.starts_with("NOPERM") || text.starts_with("ERR unknown"));
  if (!cannot_confirm && (reply->is_error() || text != node.id)) {
    client.Disconnect();
    return Status::Unavailable("redis cluster: " + node.Address() + " answers as " +
                               (reply->is_error() ? reply->Describe() : "node " + text) +
                               ", not as primary " + node.id);
  }
  client.set_confirmed_node(node.id);
  return Status::Ok();
}

Result<Reply> RedisRouter::Command(std::string_view key, const Argv& argv) {
  if (!cluster_) return single_->Take()->Command(argv);
  const auto views = Views(argv);
  auto replies = Batch(
      1, nullptr, [&](size_t) { return key; },
      [&](RedisClient& client, size_t) { client.Queue(views); });
  if (!replies) return replies.error();
  return std::move(replies->front());
}

Result<std::vector<Reply>> RedisRouter::Pipeline(std::string_view key,
                                                 const std::vector<Argv>& commands) {
  if (!cluster_) return single_->Take()->Pipeline(commands);
  return Batch(
      commands.size(), nullptr, [&](size_t) { return key; },
      [&](RedisClient& client, size_t k) { client.Queue(Views(commands[k])); });
}

Result<Reply> RedisRouter::FCall(const FunctionLibrary& library, std::string_view function,
                                 const std::vector<std::string>& keys,
                                 const std::vector<std::string>& args, const Argv* trailer,
                                 Reply* trailer_reply) {
  if (!cluster_ && trailer == nullptr) {
    return single_->Take()->FCall(library, function, keys, args);
  }
  std::vector<Reply> trailers;
  auto replies = Batch(
      1, &library, [&](size_t) { return std::string_view(keys.front()); },
      [&](RedisClient& client, size_t) { client.QueueFCall(function, keys, args); }, trailer,
      &trailers);
  if (!replies) return replies.error();
  if (trailer != nullptr) *trailer_reply = std::move(trailers.front());
  return std::move(replies->front());
}

}  // namespace taskledger::internal
