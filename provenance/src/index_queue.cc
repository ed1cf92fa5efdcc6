// ProvenanceIndex's lazy side: the Add* that queue outputs and messages, the
// queue and the bound of what it can add, and the questions that walk it
// first. The walk itself is in index.cc.
#include <algorithm>
#include <memory>
#include <utility>

#include "internal/flat_json.h"
#include "internal/leaf_text.h"
#include "taskledger/provenance/index.h"

namespace taskledger::provenance {
namespace {

// An output is flattened into the index's scratch buffer and queued as an
// exact copy (one allocation of its size); a scratch grown past this by a big
// output is given back.
constexpr std::size_t kScratchKeep = std::size_t{64} << 10;

}  // namespace

Status ProvenanceIndex::AddToolOutput(std::int64_t turn, std::string_view tool,
                                      std::string_view call_id, const nlohmann::json& output) {
  if (!health_.ok()) return health_;
  generation_ = InstanceId::New();  // the process-wide counter generations also use
  std::string& flat = flat_scratch_;
  flat.clear();
  flat.append(tool).push_back('\0');  // a tool may be named ""
  flat.append(call_id);
  const std::size_t head = tool.size() + 1 + call_id.size();
  const detail::FlatMeasure m =
      detail::Flatten(output, limits_.max_output_bytes, limits_.max_depth, flat);
  // A leaf's own source plus at most one token per byte of its text; a key
  // byte per text byte for the field and one for its tokens (normalisation
  // never lengthens a value), with a margin.
  Bound b{m.leaves + m.bytes, 4 * m.bytes, m.fits};
  bool tight = false;
  if (b.fits && !Fits(b)) {
    // Count the places a token can start instead, for the queue and for it.
    TightenQueue();
    b.sources = std::min(b.sources, detail::SourceBound(std::string_view(flat).substr(head)));
    tight = true;
  }
  const bool queued = Fits(b);
  if (queued) {
    Queue(Pending{turn, tool.size() + 1, call_id.size(), std::string(flat)}, b, tight);
  }
  if (flat.capacity() > kScratchKeep) std::string().swap(flat);
  if (queued) return Status::Ok();
  // It could reach a limit: walk now, after what came before it, so the
  // error is the one an eager walk gives and reaches this caller.
  Flush();
  if (!health_.ok()) return health_;
  // The records of its objects keep their own copy.
  return IndexOutput(turn, tool, call_id, std::make_shared<const nlohmann::json>(output));
}

Status ProvenanceIndex::AddUserMessage(std::int64_t turn, std::string_view text) {
  if (!health_.ok()) return health_;
  generation_ = InstanceId::New();  // the process-wide counter generations also use
  if (text.size() > limits_.max_output_bytes) {
    return Fail(
        Status::LimitExceeded("user message over " + std::to_string(limits_.max_output_bytes) +
                              " bytes, not indexed; calls that need provenance are denied"));
  }
  // The message, its tokens (at most one per byte) and the message's own source.
  Bound b{text.size() + 2, 4 * text.size(), true};
  bool tight = false;
  if (!Fits(b)) {
    TightenQueue();
    b.sources = 2 + detail::TokenStartBound(text);
    tight = true;
  }
  if (Fits(b)) {
    Queue(Pending{turn, 0, 0, std::string(text)}, b, tight);
    return Status::Ok();
  }
  Flush();
  if (!health_.ok()) return health_;
  return IndexUserMessage(turn, text);
}

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
