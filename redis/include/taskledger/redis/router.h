// RedisRouter: where a store's commands go. One object per store, holding a
// connection pool per server: the one server of a redis:// or unix:// URL, or
// every primary of a Redis Cluster (redis+cluster://seed[,seed...], or a
// redis:// URL that points at a cluster node: Open asks it CLUSTER SLOTS).
//
// On a cluster each command is sent to the primary that owns the slot of its
// key (CRC16 of the hash tag, taskledger/redis/slots.h), from a slot map read
// with CLUSTER SLOTS from any known node. Replies that mean "not here, nothing
// was run" are handled here and never reach the caller:
//   MOVED slot addr   the map is updated and read again; the command goes there;
//   ASK slot addr     ASKING + the command, once, to that node (resharding);
//   TRYAGAIN, CLUSTERDOWN, a primary that refuses connections
//                     back off (10 ms doubling to 200 ms), re-read the map and
//                     send again, until RouterOptions::cluster_timeout has
//                     passed; then Unavailable naming the last error;
//   "function not found" (a new node, a promoted replica that missed a
//                     FUNCTION LOAD, FUNCTION FLUSH) the library is loaded on
//                     that node and the command sent again.
// A slot the map gives no primary (read mid-failover, before the replica is
// promoted, or a slot nobody serves) is treated like TRYAGAIN: nothing was
// sent, so the map is read again and the command sent again until
// cluster_timeout; then Unavailable naming the slot. A transport failure after a
// command went out is NOT retried (some commands may have run: only the
// caller knows if a retry is safe); it marks the map stale and drops that
// node's idle connections, so the next call finds the new primary.
//
// The single-server mode adds nothing to the path of a call: the same pool
// and client calls the stores made before clusters existed.
//
// Thread-safe: the slot map is swapped under a mutex, pools are thread-safe,
// and each call leases its own connections.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "taskledger/base/status.h"
#include "taskledger/redis/client.h"
#include "taskledger/redis/pool.h"
#include "taskledger/redis/slots.h"

namespace taskledger::internal {

// A slot map with the pool of each primary (pools[i] serves primaries[i]),
// so routing a key costs no address lookup.
struct Topology : SlotMap {
  std::vector<RedisPool*> pools;
};

struct RouterOptions {
  RedisClientOptions client;
  // How long one call keeps retrying a cluster that redirects, is down
  // (CLUSTERDOWN, TRYAGAIN) or whose primary refuses connections (failover).
  std::chrono::milliseconds cluster_timeout{5000};
};

class RedisRouter;

// What a reply from a cluster node says about the command sent there, the
// one reading every caller of the router shares (Batch, FCall, a
// DeferredReply's Wait): kMoved ("MOVED slot addr") and kAsk ("ASK slot
// addr") redirect it, kBusy (TRYAGAIN, CLUSTERDOWN) asks to send it again
// later; none of those ran the command. kRan: any other reply, error or not,
// is the command's own answer.
enum class ClusterReply { kRan, kMoved, kAsk, kBusy };
ClusterReply ClassifyClusterReply(const Reply& reply);

// An FCALL sent by RedisRouter::SendFCall whose reply is not read yet ("send
// now, read later"): it holds the connection the command went out on, leased
// from its pool, so no other caller can send on it (or read its reply) before
// Wait() has read the reply. Wait() returns what RedisRouter::FCall would
// have: the reply, after the same handling of "nothing ran" answers (MOVED,
// ASK, TRYAGAIN, CLUSTERDOWN, function not found: the command is sent again,
// synchronously, through FCall), or Unavailable / Timeout when the connection
// broke or the reply did not come within the command timeout (the command
// may have run: never sent again). One Wait per object; a second returns
// FailedPrecondition. Destroying it unread reads (and discards) the reply
// first, so the connection goes back to its pool clean (or is dropped on a
// failure). Movable, not copyable; not thread-safe.
class DeferredReply {
 public:
  DeferredReply(DeferredReply&& other) noexcept;
  DeferredReply& operator=(DeferredReply&&) = delete;
  ~DeferredReply();

  // True once the command is on the wire (false: nothing was sent yet, and
  // Wait() sends it synchronously, e.g. no primary for its slot right now).
  bool sent() const { return client_.has_value(); }
  Result<Reply> Wait();
  // Wait() for this reply and, behind it, the reply of one more FCALL into
  // the same library, sent on this connection before either reply is read:
  // the server runs it after this command (one connection's commands run in
  // order), and one wait answers both. Each reply gets Wait()'s handling (a
  // "nothing ran" answer sends that command again through RedisRouter::FCall;
  // the second one after the first is answered). A transport failure fails
  // both (either may have run). When this command was not sent (sent() is
  // false) or was read already, the second is sent on its own after it.
  std::pair<Result<Reply>, Result<Reply>> WaitThen(std::string_view function,
                                                   const std::vector<std::string>& keys,
                                                   const std::vector<std::string>& args);

 private:
  friend class RedisRouter;
  DeferredReply(RedisRouter& router, const FunctionLibrary& library, std::string function,
                std::vector<std::string> keys, std::vector<std::string> args);

  RedisRouter* router_;
  const FunctionLibrary* library_;
  std::string function_;
  std::vector<std::string> keys_, args_;
  std::optional<RedisPool::Lease> client_;  // the connection with the reply outstanding
  std::optional<ClusterNode> node_;         // cluster: the node it went to
  bool waited_ = false;
};

class RedisRouter {
 public:
  // Parses `url` (redis://, unix:// or redis+cluster://) and connects to find
  // out what it names: Unavailable / Timeout / InvalidArgument.
  static Result<std::unique_ptr<RedisRouter>> Open(std::string_view url,
                                                   const RouterOptions& options);
  ~RedisRouter();
  RedisRouter(const RedisRouter&) = delete;
  RedisRouter& operator=(const RedisRouter&) = delete;

  bool cluster() const { return cluster_; }
  // The one server's pool. REQUIRES: !cluster().
  RedisPool& single() { return *single_; }
  // How many primaries serve the cluster now (1 for a single server).
  size_t primaries();

  // EnsureLoaded (client.h) on every primary.
  Status EnsureLoaded(const FunctionLibrary& library);
  // One command on the server of `key`.
  Result<Reply> Command(std::string_view key, const Argv& argv);
  // Commands on the slot of `key`, pipelined; replies in order.
  Result<std::vector<Reply>> Pipeline(std::string_view key, const std::vector<Argv>& commands);
  // FCALL of `function` on the server of keys[0], loading `library` where it
  // is missing; with a `trailer`, as Batch. REQUIRES: !keys.empty().
  Result<Reply> FCall(const FunctionLibrary& library, std::string_view function,
                      const std::vector<std::string>& keys, const std::vector<std::string>& args,
                      const Argv* trailer = nullptr, Reply* trailer_reply = nullptr);

  // The FCALL of FCall (no trailer), sent now on a connection of keys[0]'s
  // server and read later through the DeferredReply, which holds that
  // connection until then. Sending costs no wait for the server; a failed
  // write shows at Wait() (Unavailable). REQUIRES: !keys.empty().
  DeferredReply SendFCall(const FunctionLibrary& library, std::string_view function,
                          std::vector<std::string> keys, std::vector<std::string> args);

  // `count` commands on many keys at once: command k is on key_of(k), and
  // queue(client, k) must Queue() exactly that one command. Commands are
  // pipelined per server, all servers in flight before any reply is read;
  // with a `library`, FCALLs that find no function are sent again after
  // loading it there. Replies come back in command order. One failed
  // connection fails the whole call (commands on other servers may have run).
  // With a `trailer` (WAIT numreplicas timeout), it is sent on every
  // connection after the commands it ran (on a single server: once, after
  // all), and trailer_replies[k] is its reply on command k's connection
  // (nil if k got none). REQUIRES: trailer_replies non-null with a trailer.
  using KeyOf = std::function<std::string_view(size_t)>;
  using QueueOne = std::function<void(RedisClient&, size_t)>;
  Result<std::vector<Reply>> Batch(size_t count, const FunctionLibrary* library,
                                   const KeyOf& key_of, const QueueOne& queue,
                                   const Argv* trailer = nullptr,
                                   std::vector<Reply>* trailer_replies = nullptr);

  // Runs `fn` once per primary (the one server when not a cluster), each on a
  // leased connection, stopping at the first failure: for commands that
  // look at every key, like SCAN. A primary that refuses connections, or
  // whose connection breaks (fn returns Unavailable), is waited for (within
  // cluster_timeout) and the round starts over, so `fn` may run more than
  // once on a primary: it must be safe to repeat (reads, idempotent loads).
  // A round runs only on nodes that are the ones the map names (ConnectTo);
  // with kEverySlot, only on a map that serves every slot, so a listing
  // never silently leaves out the keys of a primary that is failing over
  // (kAsMapped: a cluster that runs with slots unserved, as
  // cluster-require-full-coverage no allows, still loads its functions).
  enum class Coverage { kAsMapped, kEverySlot };
  Status ForEachPrimary(const std::function<Status(RedisClient&)>& fn,
                        Coverage coverage = Coverage::kAsMapped);

 private:
  RedisRouter(RedisEndpoint credentials, std::vector<RedisEndpoint> seeds,
              const RouterOptions& options);

  RedisPool& PoolOf(const ClusterNode& node);
  std::shared_ptr<const Topology> Map();
  // Reads CLUSTER SLOTS from a known primary or a seed and installs it.
  Status Refresh();
  // Forgets a node's idle connections and marks the map stale.
  void NodeFailed(const ClusterNode& node);
  // Connects `client` (if not connected) to `node`; a new connection must
  // answer CLUSTER MYID with the id the map gives the node (when it gives
  // one): Unavailable, and the connection closed, when another server (a
  // stranger started on a failed primary's port) answers there, so nothing
  // is read from or written to it.
  static Status ConnectTo(RedisClient& client, const ClusterNode& node);

  bool cluster_;  // set once, by Open
  const RouterOptions options_;
  std::unique_ptr<RedisPool> single_;  // !cluster_
  RedisEndpoint credentials_;          // user, password for every node
  std::vector<RedisEndpoint> seeds_;
  std::mutex mu_;
  std::shared_ptr<const Topology> map_;  // null until the first Refresh
  bool stale_ = false;
  std::map<std::string, std::unique_ptr<RedisPool>> pools_;  // by address; never shrinks

  friend class ClusterBatch;
  friend class DeferredReply;
};

}  // namespace taskledger::internal
