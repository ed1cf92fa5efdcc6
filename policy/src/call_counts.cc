// CallCounts (internal/call_counts.h): ledger.calls answers kept across
// checks and followed along the conversation's growing call history.
#include "internal/call_counts.h"

#include "taskledger/pack/rule_pack.h"

namespace taskledger::policy_internal {

bool CallCounts::Matches(const CallRecord& c, std::string_view tool, bool by_arg,
                         std::string_view arg, std::string_view value) {
  if (c.outcome != "ok" || !GlobMatch(tool, c.call.tool)) return false;
  if (!by_arg) return true;
  if (!c.call.arguments.is_object()) return false;
  auto it = c.call.arguments.find(arg);
  return it != c.call.arguments.end() && it->is_string() &&
         it->get_ref<const std::string&>() == value;
}

void CallCounts::Follow(const CallList& calls) {
  const size_t had = counted_.size();
  const size_t now = calls.size();
  if (now == had && (now == 0 || &calls.back() == &counted_.back())) return;
  bool extends = now > had;
  if (extends) {
    // The records added since: the first now - had from the newest; the next
    // one must be the kept list's newest (none if it was empty).
    const CallRecord* kept_newest = had == 0 ? nullptr : &counted_.back();
    const size_t added = now - had;
    added_.clear();
    calls.ForEachNewestFirst([&](const CallRecord& c) {
      if (added_.size() < added) {
        added_.push_back(&c);
        return true;
      }
      extends = &c == kept_newest;
      return false;
    });
  }
  if (extends) {
    for (Query& q : queries_) {
      for (const CallRecord* c : added_) {
        if (Matches(*c, q.tool, q.by_arg, q.arg, q.value)) ++q.count;
      }
    }
  } else {
    queries_.clear();
    ++resets_;
  }
  counted_ = calls;
}

int64_t CallCounts::Count(const CallList& calls, std::string_view tool, bool by_arg,
                          std::string_view arg, std::string_view value) {
  Follow(calls);
  for (const Query& q : queries_) {
    if (q.by_arg == by_arg && q.tool == tool && q.arg == arg && q.value == value) return q.count;
  }
  int64_t n = 0;
  calls.ForEachNewestFirst([&](const CallRecord& c) {
    if (Matches(c, tool, by_arg, arg, value)) ++n;
    return true;
  });
  if (queries_.size() < kMaxQueries && tool.size() + arg.size() + value.size() <= kMaxQueryBytes) {
    queries_.push_back(Query{std::string(tool), std::string(arg), std::string(value), by_arg, n});
  }
  return n;
}

}  // namespace taskledger::policy_internal
