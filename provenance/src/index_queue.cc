// ProvenanceIndex's lazy side: the queue of outputs and messages not walked
// yet, the bound of what it can add, and the questions that walk it first.
// The walk itself is in index.cc.
#include <algorithm>
#include <memory>
#include <utility>

#include "internal/flat_json.h"
#include "internal/leaf_text.h"
#include "taskledger/provenance/index.h"

namespace taskledger::provenance {

bool ProvenanceIndex::Fits(const Bound& b) const {
  return b.fits && sources_.size() + pending_bound_.sources + b.sources <= limits_.max_sources &&
         key_bytes_ + pending_bound_.key_bytes + b.key_bytes <= limits_.max_key_bytes;
}

void ProvenanceIndex::Queue(Pending p, const Bound& b, bool tight) {
  p.sources = b.sources;
  p.tight = tight;
  pending_.push_back(std::move(p));
  pending_bound_.sources += b.sources;
  pending_bound_.key_bytes += b.key_bytes;
}

std::size_t ProvenanceIndex::TightSources(const Pending& p) {
  const std::string_view text = p.text;
  // A message: itself, its tokens and the message's own source.
  if (p.tool_bytes == 0) return 2 + detail::TokenStartBound(text);
  return detail::SourceBound(text.substr(p.tool_bytes + p.call_id_bytes));
}

void ProvenanceIndex::TightenQueue() {
  for (Pending& p : pending_) {
    if (p.tight) continue;
    const std::size_t tight = std::min(TightSources(p), p.sources);
    // A token start is a text byte, so this never passes the cheap bound and
    // the sum only shrinks.
    pending_bound_.sources -= p.sources - tight;
    p.sources = tight;
    p.tight = true;
  }
}

void ProvenanceIndex::Flush() const {
  if (pending_.empty()) return;
  std::vector<Pending> queue;
  queue.swap(pending_);
  pending_bound_ = Bound{};
  for (const Pending& p : queue) {
    // Within the bounds measured when they were queued, so no limit is hit;
    // if one were, health_ holds it and every lookup fails closed.
    if (p.tool_bytes == 0) {
      if (!IndexUserMessage(p.turn, p.text).ok()) break;
      continue;
    }
    const std::string_view text = p.text;
    const std::string_view tool = text.substr(0, p.tool_bytes - 1);
    const std::string_view call_id = text.substr(p.tool_bytes, p.call_id_bytes);
    auto output = std::make_shared<const nlohmann::json>(
        detail::Unflatten(text.substr(p.tool_bytes + p.call_id_bytes)));
    const Status s = IndexOutput(p.turn, tool, call_id, std::move(output));
    if (!s.ok()) break;
  }
  queue.clear();
  pending_.swap(queue);  // keeps the queue's capacity for the next outputs
}

const std::vector<ProvenanceIndex::UserMessage>& ProvenanceIndex::user_messages() const {
  Flush();
  return user_messages_;
}

const Status& ProvenanceIndex::health() const {
  Flush();
  return health_;
}

std::size_t ProvenanceIndex::queued_bytes() const {
  std::size_t bytes = pending_.capacity() * sizeof(Pending);
  for (const Pending& p : pending_) bytes += p.text.capacity();
  return bytes;
}

std::size_t ProvenanceIndex::source_count() const {
  Flush();
  return sources_.size();
}

}  // namespace taskledger::provenance
