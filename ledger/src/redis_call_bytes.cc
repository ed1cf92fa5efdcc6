// CallBytesCache (internal/redis_records.h): the encoded calls of the last
// snapshot, so that the next snapshot of a growing conversation encodes only
// the calls recorded since. A snapshot carries every call of its
// conversation; without this, a write-heavy conversation re-encoded its whole
// call history (arguments as CBOR from JSON) on every snapshot. Thread-safe.
#include <vector>

#include "internal/redis_records.h"

namespace taskledger::internal {

void CallBytesCache::Append(const CallList& calls, std::string& out) {
  std::lock_guard<std::mutex> lock(mu_);
  // The records newer than the remembered newest one, newest first; `found`
  // when the walk reached it (by address: list_ keeps it alive, so no other
  // record can have it), i.e. list_ is a prefix of `calls`.
  std::vector<const CallRecord*> newer;
  const CallRecord* known = list_.empty() ? nullptr : &list_.back();
  bool found = known == nullptr;
  calls.ForEachNewestFirst([&](const CallRecord& r) {
    if (&r == known) {
      found = true;
      return false;
    }
    newer.push_back(&r);
    return true;
  });
  if (!found) {
    bytes_.clear();
    newer.clear();
    calls.ForEachNewestFirst([&](const CallRecord& r) {
      newer.push_back(&r);
      return true;
    });
  }
  for (auto it = newer.rbegin(); it != newer.rend(); ++it) AppendCallBytes(**it, bytes_);
  list_ = calls;
  AppendArrayHead(calls.size(), out);
  out += bytes_;
}

}  // namespace taskledger::internal
