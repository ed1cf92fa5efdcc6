// KeyPattern: a dotted key pattern of the record API ("order.{id}.status",
// "order.{order}.item.{item}.price"): literal segments and `{name}` captures,
// each capture standing for exactly one key segment (an escaped id, see
// taskledger/base/key_segment.h, so it never holds a `.`).
//
// Matching walks an EntryMap by seeks: a literal prefix is one lower_bound,
// and after a captured id the walk jumps past every key below it, so
// "order.{id}.status" costs O(orders * log n) however many other keys each
// order has, and never visits keys outside the pattern's literal prefix.
// Immutable after Parse; thread-compatible.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "taskledger/base/status.h"
#include "taskledger/ledger/entry_map.h"

namespace taskledger::policy_internal {

class KeyPattern {
 public:
  struct Segment {
    bool capture = false;
    std::string text;  // literal text, or the capture's name
  };
  // Errors (InvalidArgument): empty pattern, an empty segment, a `{` or `}`
  // anywhere but around a whole segment, no capture at all.
  static Result<KeyPattern> Parse(std::string_view pattern);

  size_t captures() const { return captures_; }
  const std::vector<Segment>& segments() const { return segments_; }

  // Calls f(key, entry, raw_captures) for every key of `m` the pattern matches,
  // in key order; raw_captures are the escaped segments. Liveness is the
  // caller's to judge.
  using Visit =
      std::function<void(const std::string&, const Entry&, const std::vector<std::string_view>&)>;
  void ForEachMatch(const EntryMap& m, const Visit& f) const;
  // True if `key` matches; fills the escaped captures.
  bool Match(std::string_view key, std::vector<std::string_view>& raw) const;

 private:
  void Walk(const EntryMap& m, size_t i, std::string& prefix, std::vector<std::string_view>& raw,
            std::vector<std::string>& held, const Visit& f) const;

  std::vector<Segment> segments_;
  size_t captures_ = 0;
};

}  // namespace taskledger::policy_internal
