// The read set of a rule evaluation (see internal/ledger_view.h): the rule
// API's lookups note (category, key) cheaply while the rule runs; after the
// rule returns, TakeReads resolves each distinct key once against the state
// the check saw and records the evidence the entry carried: a digest of its
// value, the version and source (tool call) that wrote it, verified or
// claimed, and the extraction rule. A key with no live entry is recorded as
// absent: a rule that denies because something is missing read that too.
#include "internal/ledger_view.h"
#include "taskledger/base/digest.h"

namespace taskledger::policy_internal {

void LedgerView::NoteRead(Category c, std::string_view key) {
  if (!reads_.empty() && reads_.back().first == c && reads_.back().second == key) return;
  if (reads_.size() >= kMaxReads) {
    ++reads_dropped_;
    return;
  }
  reads_.emplace_back(c, std::string(key));
}

std::vector<EntryRead> LedgerView::TakeReads(const LedgerState& state, int64_t now_ms) {
  std::vector<EntryRead> out;
  out.reserve(reads_.size());
  for (auto& [c, key] : reads_) {
    bool seen = false;
    for (const EntryRead& r : out) {
      if (r.category == c && r.key == key) {
        seen = true;
        break;
      }
    }
    if (seen) continue;
    EntryRead& r = out.emplace_back();
    r.category = c;
    r.key = std::move(key);
    const Entry* e = state.FindLive(c, r.key, now_ms);
    if (e == nullptr) continue;
    r.present = true;
    r.digest = ArgsHash(e->value).substr(0, 16);
    r.turn = e->provenance.turn;
    r.source = e->provenance.source;
    r.source_id = e->provenance.source_id.str();
    r.rule = e->provenance.rule_id.str();
    r.verified = e->provenance.verified;
  }
  reads_.clear();
  reads_dropped_ = 0;
  return out;
}

}  // namespace taskledger::policy_internal
