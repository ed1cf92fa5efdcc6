// CallCounts: the answers of ledger.calls(tool [, arg, value]) kept from check
// to check and brought forward as the call history grows, so a rule that
// counts calls costs what the conversation added since the last check, not
// the length of its history.
//
// A conversation's CallList only grows by push_back, and its versions share
// every record they have in common (ledger/call_list.h). CallCounts keeps a
// copy of the list its counts describe (O(1): a reference to the newest
// record) and, for the list of the next check, walks back from its newest
// record: if the kept list's newest record is reached after exactly the
// records added since, each kept count adds what those new records match;
// otherwise (another conversation, an older version) the counts are dropped
// and each query is counted again over the whole list on first use. A record
// is identified by its address, which cannot be reused while the kept list
// holds it, so equal addresses mean the same history.
//
// Only queries by tool alone or by a string argument value are kept (the
// common case: an id); a non-string value is counted by a walk, as before.
// At most kMaxQueries queries of at most kMaxQueryBytes are kept. The kept
// list pins the last counted conversation's call records in memory until the
// next count. Not thread-safe: belongs to one LedgerView.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "taskledger/ledger/call_list.h"

namespace taskledger::policy_internal {

class CallCounts {
 public:
  // How many records of `calls` have outcome "ok", a tool matching the glob
  // `tool` and, if `by_arg`, an object of arguments whose `arg` is the string
  // `value`. O(records added since the last count + kept queries) once the
  // query is kept; O(calls.size()) the first time.
  int64_t Count(const CallList& calls, std::string_view tool, bool by_arg, std::string_view arg,
                std::string_view value);

  // Whether record `c` is counted by the query (also the walk's test).
  static bool Matches(const CallRecord& c, std::string_view tool, bool by_arg, std::string_view arg,
                      std::string_view value);

  // Times the kept counts were dropped because a list did not extend the
  // kept one (tests check the incremental path with it).
  uint64_t resets() const { return resets_; }

  static constexpr size_t kMaxQueries = 64;
  static constexpr size_t kMaxQueryBytes = 512;

 private:
  struct Query {
    std::string tool;
    std::string arg;
    std::string value;
    bool by_arg = false;
    int64_t count = 0;
  };
  // Brings the kept counts from counted_ to `calls`.
  void Follow(const CallList& calls);

  CallList counted_;  // the list the kept counts describe
  std::vector<Query> queries_;
  std::vector<const CallRecord*> added_;  // reused by Follow
  uint64_t resets_ = 0;
};

}  // namespace taskledger::policy_internal
