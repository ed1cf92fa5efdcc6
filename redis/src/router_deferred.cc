// RedisRouter::SendFCall and DeferredReply: an FCALL sent now whose reply is
// read later, for a caller that has other work to do before it needs the
// answer (a Session's settle of a write: taskledger/session/session.h). The
// reply's connection stays leased to the DeferredReply until it is read, so
// the pool never hands a connection with a reply outstanding to anyone else.
// The "nothing ran" answers a cluster gives (MOVED, ASK, TRYAGAIN,
// CLUSTERDOWN) are resolved at Wait() by sending the command again through
// the synchronous FCall, which follows them (router.h); a transport failure
// is reported and never retried (the command may have run). WaitThen sends
// one more FCALL behind the first on its connection and reads both. Not thread-safe
// per object; the router itself stays thread-safe.
#include <string_view>
#include <utility>

#include "taskledger/redis/router.h"

namespace taskledger::internal {

DeferredReply::DeferredReply(RedisRouter& router, const FunctionLibrary& library,
                             std::string function, std::vector<std::string> keys,
                             std::vector<std::string> args)
    : router_(&router),
      library_(&library),
      function_(std::move(function)),
      keys_(std::move(keys)),
      args_(std::move(args)) {}

DeferredReply::DeferredReply(DeferredReply&& other) noexcept
    : router_(other.router_),
      library_(other.library_),
      function_(std::move(other.function_)),
      keys_(std::move(other.keys_)),
      args_(std::move(other.args_)),
      client_(std::move(other.client_)),
      node_(std::move(other.node_)),
      waited_(other.waited_) {
  other.client_.reset();
  other.waited_ = true;  // the moved-from object owes nothing
}

DeferredReply::~DeferredReply() {
  // Never leave a reply in a pooled connection's stream, nor a command unsent.
  if (!waited_) (void)Wait();
}

Result<Reply> DeferredReply::Wait() {
  if (waited_) return Status::FailedPrecondition("the reply of " + function_ + " was read already");
  waited_ = true;
  if (!client_) return router_->FCall(*library_, function_, keys_, args_);
  RedisPool::Lease lease = std::move(*client_);
  client_.reset();
  auto replies =
      lease->FlushReloading(*library_, [&](size_t) { lease->QueueFCall(function_, keys_, args_); });
  if (!replies) {
    if (node_) router_->NodeFailed(*node_);
    return replies.error();
  }
  Reply reply = std::move(replies->front());
  if (router_->cluster() && ClassifyClusterReply(reply) != ClusterReply::kRan) {
    return router_->FCall(*library_, function_, keys_, args_);
  }
  return reply;
}

std::pair<Result<Reply>, Result<Reply>> DeferredReply::WaitThen(
    std::string_view function, const std::vector<std::string>& keys,
    const std::vector<std::string>& args) {
  if (waited_ || !client_) {
    Result<Reply> first = Wait();
    return {std::move(first), router_->FCall(*library_, function, keys, args)};
  }
  waited_ = true;
  RedisPool::Lease lease = std::move(*client_);
  client_.reset();
  lease->QueueFCall(function, keys, args);
  auto replies = lease->FlushReloading(*library_, [&](size_t i) {
    if (i == 0) {
      lease->QueueFCall(function_, keys_, args_);
    } else {
      lease->QueueFCall(function, keys, args);
    }
  });
  if (!replies) {
    if (node_) router_->NodeFailed(*node_);
    return {replies.error(), replies.error()};
  }
  auto ran = [&](Reply& reply, std::string_view f, const std::vector<std::string>& k,
                 const std::vector<std::string>& a) -> Result<Reply> {
    if (router_->cluster() && ClassifyClusterReply(reply) != ClusterReply::kRan) {
      return router_->FCall(*library_, f, k, a);
    }
    return std::move(reply);
  };
  Result<Reply> first = ran((*replies)[0], function_, keys_, args_);
  return {std::move(first), ran((*replies)[1], function, keys, args)};
}

DeferredReply RedisRouter::SendFCall(const FunctionLibrary& library, std::string_view function,
                                     std::vector<std::string> keys, std::vector<std::string> args) {
  DeferredReply out(*this, library, std::string(function), std::move(keys), std::move(args));
  RedisPool* pool = single_.get();
  std::optional<ClusterNode> node;
  if (cluster_) {
    auto map = Map();
    if (!map) return out;  // Wait() sends it through FCall, which waits for a map
    const uint16_t owner = map->owner[KeySlot(out.keys_.front())];
    if (owner == SlotMap::kNoOwner) return out;
    node = map->primaries[owner];
    pool = map->pools[owner];
  }
  RedisPool::Lease lease = pool->Take();
  // A pooled connection to a primary that died (failover) is found before
  // anything is sent on it; one that cannot connect sends nothing, and
  // Wait() goes through FCall (which retries or reports the failure).
  if (node && lease->DropIfClosed()) NodeFailed(*node);
  if (Status connected = node ? ConnectTo(*lease, *node) : lease->Connect(); !connected.ok()) {
    if (node) NodeFailed(*node);
    return out;
  }
  lease->QueueFCall(out.function_, out.keys_, out.args_);
  lease->Push();  // a failed write is kept for the Flush in Wait()
  out.client_.emplace(std::move(lease));
  out.node_ = std::move(node);
  return out;
}

}  // namespace taskledger::internal
