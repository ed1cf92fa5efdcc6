// ProvenanceIndex's lazy side: what an output may add at most (measured
// without walking its text), the queue of outputs and messages not walked
// yet, and the questions that walk it first. The walk itself is in index.cc.
#include <utility>

#include "taskledger/provenance/index.h"

namespace taskledger::provenance {
namespace {

// Every byte of a value's text at most (one key byte per text byte for the
// field and one for the tokens in it: normalisation never lengthens), with
// a margin.
constexpr std::size_t kKeyBytesPerTextByte = 4;
// Upper bounds of a scalar's JSON text (ScalarText in index.cc).
constexpr std::size_t kIntegerBytes = 20;
constexpr std::size_t kFloatBytes = 32;
constexpr std::size_t kBooleanBytes = 5;

// Text bytes and leaves of one output, stopping as soon as it could reach a
// limit of its own.
struct Meter {
  std::size_t max_bytes;
  int max_depth;
  std::size_t bytes = 0;
  std::size_t leaves = 0;
  bool fits = true;

  void Node(const nlohmann::json& v, int depth) {
    using Type = nlohmann::json::value_t;
    switch (v.type()) {
      case Type::object:
      case Type::array:
        if (depth >= max_depth) {
          fits = false;
          return;
        }
        for (const auto& child : v) {
          Node(child, depth + 1);
          if (!fits) return;
        }
        return;
      case Type::null:
        return;
      case Type::string:
        bytes += v.get_ref<const std::string&>().size();
        break;
      case Type::boolean:
        bytes += kBooleanBytes;
        break;
      case Type::number_integer:
      case Type::number_unsigned:
        bytes += kIntegerBytes;
        break;
      case Type::number_float:
        bytes += kFloatBytes;
        break;
      case Type::binary:
      case Type::discarded:
        fits = false;  // its text is not cheap to size: walk it now
        return;
    }
    ++leaves;
    if (bytes > max_bytes) fits = false;
  }
};

}  // namespace

ProvenanceIndex::Bound ProvenanceIndex::Measure(const nlohmann::json& output) const {
  Meter meter{limits_.max_output_bytes, limits_.max_depth};
  meter.Node(output, 0);
  // A leaf's own source plus at most one token per byte of its text.
  return Bound{meter.leaves + meter.bytes, kKeyBytesPerTextByte * meter.bytes, meter.fits};
}

bool ProvenanceIndex::Fits(const Bound& b) const {
  return b.fits && sources_.size() + pending_bound_.sources + b.sources <= limits_.max_sources &&
         key_bytes_ + pending_bound_.key_bytes + b.key_bytes <= limits_.max_key_bytes;
}

void ProvenanceIndex::Queue(Pending p, const Bound& b) {
  pending_.push_back(std::move(p));
  pending_bound_.sources += b.sources;
  pending_bound_.key_bytes += b.key_bytes;
}

void ProvenanceIndex::Flush() const {
  if (pending_.empty()) return;
  std::vector<Pending> queue = std::move(pending_);
  pending_.clear();
  pending_bound_ = Bound{};
  for (const Pending& p : queue) {
    // Within the bounds measured when they were queued, so no limit is hit;
    // if one were, health_ holds it and every lookup fails closed.
    const Status s = p.output ? IndexOutput(p.turn, p.tool, p.call_id, *p.output)
                              : IndexUserMessage(p.turn, p.text);
    if (!s.ok()) break;
  }
}

const std::vector<ProvenanceIndex::UserMessage>& ProvenanceIndex::user_messages() const {
  Flush();
  return user_messages_;
}

const Status& ProvenanceIndex::health() const {
  Flush();
  return health_;
}

std::size_t ProvenanceIndex::source_count() const {
  Flush();
  return sources_.size();
}

}  // namespace taskledger::provenance
