// The read log of a check (see internal/ledger_view.h): the rule API's
// lookups note (category, key) into reused buffers while the rules run
// (a few nanoseconds a read); PolicyChecker::ResolveReads later turns one
// rule's notes into evidence against the state the check saw, each distinct
// key once: a digest of the value, the version and source (tool call) that
// wrote it, verified or claimed, and the extraction rule. A key with no live
// entry is recorded as absent: a rule that denies because something is
// missing read that too.
#include "internal/ledger_view.h"
#include "taskledger/base/digest.h"

namespace taskledger::policy_internal {

void LedgerView::NoteRead(Category c, std::string_view key) {
  if (noted_size_ > rule_begin_) {
    const NotedRead& last = noted_[noted_size_ - 1];
    if (last.category == c && last.key == key) return;
  }
  if (noted_size_ - rule_begin_ >= kMaxReads) {
    ++rule_dropped_now_;
    return;
  }
  if (noted_size_ == noted_.size()) noted_.emplace_back();
  NotedRead& r = noted_[noted_size_++];
  r.category = c;
  r.key.assign(key);
}

std::vector<EntryRead> LedgerView::ResolveReads(size_t k, const LedgerState& state,
                                                int64_t now_ms) const {
  std::vector<EntryRead> out;
  if (k >= rule_ends_.size()) return out;
  const size_t begin = k == 0 ? 0 : rule_ends_[k - 1];
  const size_t end = rule_ends_[k];
  out.reserve(end - begin);
  for (size_t i = begin; i < end; ++i) {
    const NotedRead& n = noted_[i];
    bool seen = false;
    for (const EntryRead& r : out) {
      if (r.category == n.category && r.key == n.key) {
        seen = true;
        break;
      }
    }
    if (seen) continue;
    EntryRead& r = out.emplace_back();
    r.category = n.category;
    r.key = n.key;
    const Entry* e = state.FindLive(n.category, n.key, now_ms);
    if (e == nullptr) continue;
    r.present = true;
    r.digest = ArgsHash(e->value).substr(0, 16);
    r.turn = e->provenance.turn;
    r.source = e->provenance.source;
    r.source_id = e->provenance.source_id.str();
    r.rule = e->provenance.rule_id.str();
    r.verified = e->provenance.verified;
  }
  return out;
}

}  // namespace taskledger::policy_internal
