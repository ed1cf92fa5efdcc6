// RedisStore's reads (internal/redis_store_read.h): the head is the newest
// entry of the turn stream; a state is the newest snapshot at or below the
// version asked for plus the turns after it, paged back newest first; a range
// of turns is one XRANGE checked against the head; catching a held state up
// is one FCALL tl_since from its version; a tenant's conversations
// are a SCAN of every primary. The commit path, which writes the stream, is
// redis_store.cc.
#include "internal/redis_store_read.h"

#include <algorithm>
#include <deque>
#include <set>

#include "internal/redis_stream.h"
#include "taskledger/redis/keys.h"

namespace taskledger::internal {
namespace {

Status NotFound(const ConversationId& id, uint64_t version, uint64_t head) {
  return Status::NotFound("conversation '" + DescribeConversation(id) + "' has no version " +
                          std::to_string(version) + " (head is " + std::to_string(head) + ")");
}

// The incarnation an XRANGE key 0-1 0-1 reply shows: field `i` of the first
// entry; empty when it has none (never written, or written before
// incarnations).
Result<std::string> IncarnationOfReply(const Reply& reply, const std::string& what) {
  std::vector<StreamEntry> entries;
  if (Status s = AppendEntries(reply, what, entries); !s.ok()) return s;
  if (entries.empty() || entries[0].incarnation == nullptr) return std::string();
  return *entries[0].incarnation;
}

}  // namespace

std::string DescribeConversation(const ConversationId& id) {
  return id.tenant + "/" + id.conversation;
}

Result<uint64_t> HeadOfReply(const Reply& reply, const std::string& what) {
  std::vector<StreamEntry> top;
  if (Status s = AppendEntries(reply, what, top); !s.ok()) return s;
  return top.empty() ? uint64_t{0} : top[0].version;
}

Result<uint64_t> ReadStreamHead(RedisRouter& router, const ConversationId& id) {
  std::string key = TurnStreamKey(id);
  auto reply = router.Command(key, {"XREVRANGE", key, "+", "-", "COUNT", "1"});
  if (!reply) return reply.error();
  return HeadOfReply(*reply, "head of " + DescribeConversation(id));
}

// The first page, first_page entries, holds a snapshot when the writers used
// this store's snapshot_every; else pages grow until one is reached.
Result<LedgerState> ReadStreamState(RedisRouter& router, const ConversationId& id,
                                    std::optional<uint64_t> version, uint64_t first_page,
                                    std::shared_ptr<const TurnRecord>* turn,
                                    std::string* incarnation) {
  if (turn != nullptr) *turn = nullptr;
  std::string key = TurnStreamKey(id), what = "read " + DescribeConversation(id);
  std::string end = version ? EntryId(*version) : "+";
  std::deque<Reply> pages;  // the entries point into these
  std::vector<StreamEntry> entries;
  for (size_t count = first_page;; count = std::min<size_t>(count * 2, 1024)) {
    Argv page = {"XREVRANGE", key, end, "-", "COUNT", std::to_string(count)};
    if (incarnation != nullptr && pages.empty()) {
      // The incarnation and the first page in one round trip, in that order
      // on one connection.
      auto replies = router.Pipeline(key, {{"XRANGE", key, "0-1", "0-1"}, std::move(page)});
      if (!replies) return replies.error();
      auto i = IncarnationOfReply((*replies)[0], "incarnation of " + DescribeConversation(id));
      if (!i) return i.error();
      *incarnation = std::move(i.value());
      pages.push_back(std::move((*replies)[1]));
    } else {
      auto reply = router.Command(key, page);
      if (!reply) return reply.error();
      pages.push_back(std::move(reply.value()));
    }
    size_t before = entries.size();
    if (Status s = AppendEntries(pages.back(), what, entries); !s.ok()) return s;
    if (before == 0 && version && (entries.empty() || entries[0].version != *version)) {
      auto head = router.Command(key, {"XREVRANGE", key, "+", "-", "COUNT", "1"});
      if (!head) return head.error();
      auto h = HeadOfReply(*head, what);
      if (!h) return h.error();
      if (*h < *version) return NotFound(id, *version, *h);
      return Status::Corruption(what + ": version " + std::to_string(*version) +
                                " is missing (head is " + std::to_string(*h) + ")");
    }
    if (entries.empty()) return LedgerState{};  // the head of a conversation never written
    if (Status s = CheckContiguous(entries, true, what); !s.ok()) return s;
    for (size_t i = before; i < entries.size(); ++i) {
      if (entries[i].state != nullptr) {
        entries.resize(i + 1);
        return Replay(entries, what, turn);
      }
    }
    // Version 1, or the end of the stream without a snapshot (Corruption).
    if (entries.back().version == 1 || entries.size() - before < count)
      return Replay(entries, what, turn);
    end = "(" + EntryId(entries.back().version);
  }
}

namespace {

// FCALL tl_since 1 key <from> <count>: the incarnation and the entries, or
// nullopt for an error reply (a server without the function, an ACL refusing
// it) or a malformed one; the entries point into `reply`.
Result<std::optional<std::string>> Since(RedisRouter& router, const std::string& key,
                                         const std::string& from, size_t count, Reply& reply,
                                         std::vector<StreamEntry>& entries) {
  const std::string n = std::to_string(count);
  // No library: a server whose tl_since is missing (an older process
  // reloaded its own library), or a user whose ACL may not load one,
  // answers an error, and the caller reads the head whole.
  auto replies = router.Batch(
      1, nullptr, [&](size_t) { return std::string_view(key); },
      [&](RedisClient& client, size_t) {
        client.Queue({"FCALL", "tl_since", "1", key, from, n});
      });
  if (!replies) return replies.error();
  reply = std::move((*replies)[0]);
  if (!reply.is_array() || reply.elements().size() != 2 || !reply.elements()[0].is_string() ||
      !AppendEntries(reply.elements()[1], "tl_since", entries).ok()) {
    return std::optional<std::string>();
  }
  return std::optional<std::string>(reply.elements()[0].str());
}

}  // namespace

Result<std::string> StreamIncarnationOf(RedisRouter& router, const ConversationId& id,
                                        const TurnRecord& turn_one) {
  Reply reply;
  std::vector<StreamEntry> entries;
  auto incarnation = Since(router, TurnStreamKey(id), EntryId(1), 1, reply, entries);
  if (!incarnation) return incarnation.error();
  if (!*incarnation || incarnation->value().empty() || entries.empty() || entries[0].version != 1) {
    return std::string();
  }
  auto turn = DecodeTurnEntry(entries[0], "incarnation of " + DescribeConversation(id));
  if (!turn || !(*turn == turn_one)) return std::string();
  return std::move(incarnation->value());
}

Result<std::optional<HeadRead>> CatchUpStreamState(RedisRouter& router, const ConversationId& id,
                                                   const HeadRead& known,
                                                   std::optional<std::string>* seen) {
  const std::optional<HeadRead> whole;  // read the whole head instead
  if (seen != nullptr) seen->reset();
  const uint64_t version = known.state.version;
  if (version == 0 || known.incarnation.empty() || known.turn == nullptr ||
      known.turn->turn != version) {
    return whole;
  }
  // A sixteenth of the held records, at least 64 turns: a whole read replays
  // up to that many after its snapshot.
  const size_t limit = std::max<size_t>(64, (known.state.size() + known.state.calls.size()) / 16);
  const std::string what = "read " + DescribeConversation(id);
  Reply reply;
  std::vector<StreamEntry> entries;
  auto incarnation = Since(router, TurnStreamKey(id), EntryId(version), limit + 2, reply, entries);
  if (!incarnation) return incarnation.error();
  // Another incarnation (dropped and written again since), none, or an
  // error reply: the whole head.
  if (!*incarnation) return whole;
  if (seen != nullptr) *seen = incarnation->value();
  if (incarnation->value() != known.incarnation) return whole;
  // The held version must be there with the held turn (not one written
  // again after a failover lost it), and the head at most `limit` turns
  // after it. Whatever does not decode or apply is left to the whole read,
  // which reports a real corruption.
  if (entries.empty() || entries.front().version != version || entries.size() > limit + 1 ||
      !CheckContiguous(entries, false, what).ok()) {
    return whole;
  }
  auto held = DecodeTurnEntry(entries.front(), what);
  if (!held || !(*held == *known.turn)) return whole;
  HeadRead out{known.state, known.turn, known.incarnation, /*extends_known=*/true};
  for (size_t i = 1; i < entries.size(); ++i) {
    auto turn = DecodeTurnEntry(entries[i], what);
    if (!turn || !ApplyTurn(out.state, *turn).ok()) return whole;
    out.turn = std::make_shared<const TurnRecord>(std::move(turn.value()));
  }
  return std::optional<HeadRead>(std::move(out));
}

Result<std::vector<TurnRecord>> ReadStreamTurns(RedisRouter& router, const ConversationId& id,
                                                uint64_t first, uint64_t last) {
  first = std::max<uint64_t>(first, 1);
  std::string key = TurnStreamKey(id), what = "turns of " + DescribeConversation(id);
  std::string from = EntryId(first), to = EntryId(last);
  auto replies = router.Batch(
      first <= last ? 2 : 1, nullptr, [&](size_t) { return std::string_view(key); },
      [&](RedisClient& client, size_t k) {
        if (k == 0) {
          client.Queue({"XREVRANGE", key, "+", "-", "COUNT", "1"});
        } else {
          client.Queue({"XRANGE", key, from, to});
        }
      });
  if (!replies) return replies.error();
  auto head = HeadOfReply((*replies)[0], what);
  if (!head) return head.error();
  if (last > *head) return NotFound(id, last, *head);
  std::vector<TurnRecord> turns;
  if (first > last) return turns;
  std::vector<StreamEntry> entries;
  if (Status s = AppendEntries((*replies)[1], what, entries); !s.ok()) return s;
  // Bracket the entries with the versions asked for, so that a gap at
  // either end is named like one in the middle.
  StreamEntry low{first - 1}, high{last + 1};
  entries.insert(entries.begin(), low);
  entries.push_back(high);
  if (Status s = CheckContiguous(entries, false, what); !s.ok()) return s;
  for (size_t i = 1; i + 1 < entries.size(); ++i) {
    auto turn = DecodeTurnEntry(entries[i], what);
    if (!turn) return turn.error();
    turns.push_back(std::move(turn.value()));
  }
  return turns;
}

Result<std::vector<std::string>> ListStreamConversations(RedisRouter& router,
                                                         const std::string& tenant) {
  std::set<std::string> found;  // SCAN may return a key more than once
  std::string what = "list conversations of " + tenant;
  std::string pattern = TenantStreamPattern(tenant);
  // ACL key patterns do not filter what SCAN returns, so first touch a key
  // under the tenant's own prefix: a user whose ACL excludes that tenant
  // gets NOPERM here and sees no conversation names.
  std::string prefix = TenantKeyPrefix(tenant);
  auto allowed = router.Command(prefix, {"EXISTS", prefix});
  if (!allowed) return allowed.error();
  if (allowed->is_error()) return ServerErrorToStatus(*allowed, what);
  // A cluster primary's SCAN sees only its own keys: scan every one, and
  // only once every slot has a primary (a failover under way is waited for).
  Status scanned = router.ForEachPrimary(
      [&](RedisClient& client) {
        std::string cursor = "0";
        do {
          auto reply =
              client.Command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000", "TYPE", "stream"});
          if (!reply) return reply.error();
          if (reply->is_error()) return ServerErrorToStatus(*reply, what);
          if (reply->elements().size() != 2)
            return Status::Internal("SCAN: unexpected " + reply->Describe());
          cursor = reply->elements()[0].str();
          for (const Reply& key : reply->elements()[1].elements()) {
            if (auto conversation = ConversationOfStreamKey(key.str(), tenant)) {
              found.insert(std::move(*conversation));
            }
          }
        } while (cursor != "0");
        return Status::Ok();
      },
      RedisRouter::Coverage::kEverySlot);
  if (!scanned.ok()) return scanned;
  return std::vector<std::string>(found.begin(), found.end());
}

}  // namespace taskledger::internal
