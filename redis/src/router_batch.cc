// RedisRouter::Batch: commands on many keys, pipelined per node with every
// node in flight at once, and the cluster's "not here, nothing ran" replies
// (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, function not found) handled by sending
// those commands again, until they get a real reply or the call's
// cluster_timeout has passed. Rules: taskledger/redis/router.h. Thread-safe
// (the batch's own state lives on the stack).
#include <algorithm>
#include <charconv>
#include <optional>
#include <thread>

#include "taskledger/redis/router.h"

namespace taskledger::internal {
namespace {

using Clock = std::chrono::steady_clock;

bool Starts(const Reply& r, std::string_view prefix) {
  return r.is_error() && std::string_view(r.str()).starts_with(prefix);
}

// The node of "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381".
// An empty host (a node that does not know its own address) is `fallback`.
std::optional<ClusterNode> RedirectTarget(const std::string& error, const std::string& fallback) {
  auto space = error.rfind(' ');
  if (space == std::string::npos) return std::nullopt;
  std::string_view address = std::string_view(error).substr(space + 1);
  auto colon = address.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  ClusterNode node;
  node.host = std::string(address.substr(0, colon));
  if (node.host.empty()) node.host = fallback;
  std::string_view port = address.substr(colon + 1);
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), node.port);
  if (ec != std::errc() || end != port.data() + port.size()) return std::nullopt;
  return node;
}

}  // namespace

// One Batch call on a cluster.
class ClusterBatch {
 public:
  ClusterBatch(RedisRouter& router, size_t count, const FunctionLibrary* library,
               const RedisRouter::KeyOf& key_of, const RedisRouter::QueueOne& queue,
               const Argv* trailer, std::vector<Reply>* trailer_out)
      : router_(router),
        library_(library),
        key_of_(key_of),
        queue_(queue),
        trailer_(trailer),
        trailer_out_(trailer_out),
        out_(count),
        target_(count),
        asking_(count, false) {}

  Result<std::vector<Reply>> Run() {
    const auto deadline = Clock::now() + router_.options_.cluster_timeout;
    auto backoff = std::chrono::milliseconds(10);
    std::vector<size_t> todo(out_.size());
    for (size_t k = 0; k < todo.size(); ++k) todo[k] = k;
    for (int round = 1;; ++round) {
      std::vector<size_t> again;
      // Redirects are followed at once, but nodes that keep redirecting
      // (a cluster whose configuration is still converging) are waited for.
      bool wait = round > 8;
      if (Status s = Round(todo, again, wait); !s.ok()) return s;
      if (again.empty()) return std::move(out_);
      if (Clock::now() >= deadline) {
        return Status::Unavailable("redis cluster: no answer within " +
                                   std::to_string(router_.options_.cluster_timeout.count()) +
                                   " ms: " + last_error_);
      }
      if (wait) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        std::this_thread::sleep_for(std::min(backoff, left));
        backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
        std::lock_guard lock(router_.mu_);
        router_.stale_ = true;
      }
      todo = std::move(again);
    }
  }

 private:
  struct Group {
    ClusterNode node;
    RedisPool* pool;
    std::vector<size_t> commands;
    std::vector<size_t> finals;  // commands that got their final reply this round
    std::optional<RedisPool::Lease> client;
  };

  // Sends `todo` (grouped by node, every group before any reply is read),
  // reads the replies, and puts the commands to send again in `again`;
  // `wait`: one of them waits for the cluster (back off before the next round).
  Status Round(const std::vector<size_t>& todo, std::vector<size_t>& again, bool& wait) {
    auto map = router_.Map();
    if (!map) return Status::Unavailable("redis cluster: no slot map: " + last_error_);
    std::vector<Group> groups;
    for (size_t k : todo) {
      const ClusterNode* node = nullptr;
      RedisPool* pool = nullptr;
      if (target_[k]) {
        node = &*target_[k];
        pool = &router_.PoolOf(*node);
      } else {
        uint16_t slot = KeySlot(key_of_(k));
        uint16_t owner = map->owner[slot];
        if (owner == SlotMap::kNoOwner) {
          // A map read while a failed primary's replica is not yet promoted
          // lacks its slots. Nothing was sent: wait, read the map anew and
          // send again until the call's time is up.
          last_error_ = "slot " + std::to_string(slot) +
                        " is not served by any node (cluster map of " +
                        std::to_string(map->primaries.size()) + " primaries)";
          again.push_back(k);
          wait = true;
          continue;
        }
        node = &map->primaries[owner];
        pool = map->pools[owner];
      }
      auto g = std::find_if(groups.begin(), groups.end(),
                            [&](const Group& x) { return x.pool == pool; });
      if (g == groups.end()) {
        groups.push_back(Group{*node, pool, {}, {}, std::nullopt});
        g = std::prev(groups.end());
      }
      g->commands.push_back(k);
    }
    for (Group& g : groups) {
      g.client.emplace(g.pool->Take());
      // A pooled connection to a primary that died (failover) is found
      // here, before anything is sent on it.
      if ((*g.client)->DropIfClosed()) router_.NodeFailed(g.node);
      if (Status c = RedisRouter::ConnectTo(**g.client, g.node); !c.ok()) {
        // Nothing was sent: safe to send again once the map is read anew.
        router_.NodeFailed(g.node);
        last_error_ = c.message();
        for (size_t k : g.commands) target_[k].reset();
        again.insert(again.end(), g.commands.begin(), g.commands.end());
        wait = true;
        g.client.reset();
        continue;
      }
      for (size_t k : g.commands) {
        if (asking_[k]) (*g.client)->Queue({"ASKING"});
        queue_(**g.client, k);
      }
      (*g.client)->Push();
    }
    Status failure;
    std::vector<ClusterNode> reload;
    for (Group& g : groups) {
      if (!g.client) continue;
      auto replies = (*g.client)->Flush();
      if (!replies) {
        router_.NodeFailed(g.node);
        if (failure.ok()) failure = replies.error();
        continue;
      }
      size_t at = 0;
      for (size_t k : g.commands) {
        if (asking_[k]) ++at;  // ASKING's +OK
        Reply& r = (*replies)[at++];
        const size_t before = again.size();
        if (Status s = Classify(k, g.node, r, again, wait, reload); !s.ok() && failure.ok()) {
          failure = s;
        }
        if (again.size() == before) g.finals.push_back(k);
      }
    }
    if (!failure.ok()) return failure;
    if (trailer_ != nullptr) {
      if (Status s = SendTrailers(groups); !s.ok()) return s;
    }
    for (const ClusterNode& node : reload) {
      auto loaded =
          router_.PoolOf(node).Take()->Command({"FUNCTION", "LOAD", "REPLACE", library_->source});
      if (!loaded) return loaded.error();
      if (loaded->is_error() && !Starts(*loaded, "MOVED") && !Starts(*loaded, "READONLY")) {
        return LibraryLoadRefused(*loaded, *library_);
      }
    }
    return Status::Ok();
  }

  // The trailer (WAIT) on every connection that ran final commands this
  // round, all in flight at once; its reply goes to each of those commands.
  Status SendTrailers(std::vector<Group>& groups) {
    const std::vector<std::string_view> views(trailer_->begin(), trailer_->end());
    for (Group& g : groups) {
      if (g.client && !g.finals.empty()) {
        (*g.client)->Queue(views);
        (*g.client)->Push();
      }
    }
    Status failure;
    for (Group& g : groups) {
      if (!g.client || g.finals.empty()) continue;
      auto replies = (*g.client)->Flush();
      if (!replies) {
        router_.NodeFailed(g.node);
        if (failure.ok()) failure = replies.error();
        continue;
      }
      for (size_t k : g.finals) (*trailer_out_)[k] = replies->front();
    }
    return failure;
  }

  // Keeps reply `r` of command k, or schedules k to be sent again.
  Status Classify(size_t k, const ClusterNode& node, Reply& r, std::vector<size_t>& again,
                  bool& wait, std::vector<ClusterNode>& reload) {
    const ClusterReply kind = ClassifyClusterReply(r);
    const bool moved = kind == ClusterReply::kMoved, ask = kind == ClusterReply::kAsk;
    if (moved || ask) {
      auto to = RedirectTarget(r.str(), node.host);
      if (!to) return Status::Internal("redis cluster: unreadable redirect '" + r.str() + "'");
      last_error_ = r.str();
      if (moved) {
        std::lock_guard lock(router_.mu_);
        router_.stale_ = true;
      }
      target_[k] = *to;
      asking_[k] = ask;
      again.push_back(k);
      return Status::Ok();
    }
    asking_[k] = false;
    target_[k].reset();
    if (kind == ClusterReply::kBusy) {
      last_error_ = node.Address() + ": " + r.str();
      again.push_back(k);
      wait = true;
      return Status::Ok();
    }
    if (library_ != nullptr && IsFunctionNotFound(r)) {
      if (std::none_of(reload.begin(), reload.end(),
                       [&](const ClusterNode& n) { return n.Address() == node.Address(); })) {
        reload.push_back(node);
      }
      last_error_ = node.Address() + ": " + r.str();
      target_[k] = node;
      again.push_back(k);
      return Status::Ok();
    }
    out_[k] = std::move(r);
    return Status::Ok();
  }

  RedisRouter& router_;
  const FunctionLibrary* library_;
  const RedisRouter::KeyOf& key_of_;
  const RedisRouter::QueueOne& queue_;
  const Argv* trailer_;
  std::vector<Reply>* trailer_out_;
  std::vector<Reply> out_;
  std::vector<std::optional<ClusterNode>> target_;  // a redirect's node, for the next round
  std::vector<bool> asking_;                        // send ASKING first
  std::string last_error_ = "no reply";
};

Result<std::vector<Reply>> RedisRouter::Batch(size_t count, const FunctionLibrary* library,
                                              const KeyOf& key_of, const QueueOne& queue,
                                              const Argv* trailer,
                                              std::vector<Reply>* trailer_replies) {
  if (count == 0) return std::vector<Reply>();
  if (trailer != nullptr) trailer_replies->assign(count, Reply());
  if (!cluster_) {
    auto client = single_->Take();
    for (size_t k = 0; k < count; ++k) queue(*client, k);
    auto replies = library == nullptr
                       ? client->Flush()
                       : client->FlushReloading(*library, [&](size_t k) { queue(*client, k); });
    if (!replies || trailer == nullptr) return replies;
    auto after = client->Command(*trailer);
    if (!after) return after.error();
    trailer_replies->assign(count, *after);
    return replies;
  }
  return ClusterBatch(*this, count, library, key_of, queue, trailer, trailer_replies).Run();
}

}  // namespace taskledger::internal
