// The provenance index of one conversation: for every normalised value, the
// places it was seen — a user message (turn), a tool output (tool, call id,
// JSON pointer of the field, the record around it with its scalar sibling
// fields, whether the pack trusts that field), or a pack constant. Kept
// incrementally and lazily: an output or message is queued when it arrives
// (the output copied into one flat buffer, not walked) and the queue is walked, in arrival order,
// by the first question asked after it (SourcesOf, user_messages, health,
// source_count), so a conversation whose rules never ask provenance never
// pays for the walk. Each output is walked once; a lookup is one hash probe
// plus a word-boundary search of the user's messages, never a scan of
// outputs. Whole field values are indexed, and so are the tokens inside them
// (URLs, e-mail addresses, account numbers, numbers, money; see tokens.h)
// with `token = true`. Answers and their order are the same as if every
// output had been walked when it arrived.
//
// Bounded: an output larger than `IndexLimits::max_output_bytes`, or one that
// would take the index past `max_sources` or `max_key_bytes`, is refused with
// LimitExceeded, and from then on the index is incomplete: every lookup
// returns that error (a rule asking for provenance fails, so the call is
// denied), never a partial answer that could read as "not seen". The refusal
// is still returned by the Add* that caused it: each Add* measures what it
// queues (text bytes, depth, an upper bound of the sources and key bytes it
// can add), and one that could reach a limit walks the queue and itself at
// once, so the error it returns is exactly the one an eager walk would give.
// Not thread-safe, not even for concurrent const calls (a question walks the
// queue): one index per conversation, used by the thread that owns the
// session.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"
#include "taskledger/provenance/tokens.h"
#include "taskledger/provenance/trust.h"

namespace taskledger::provenance {

enum class SourceKind : std::uint8_t { kUser, kTool, kConstant };

// "user", "tool", "constant".
std::string_view SourceKindName(SourceKind kind);

// The object a value sits in (a message, a file, an event): its pointer and
// its scalar fields (strings cut at 256 bytes), shared by every value in it.
// The fields are built from the object on first use (most records are never
// asked for); the record keeps the output it points into alive. Not
// thread-safe, like the index.
struct Record {
  std::string pointer;
  std::shared_ptr<const nlohmann::json> output;  // owns `object`
  const nlohmann::json* object = nullptr;        // the object in `output` at `pointer`

  const nlohmann::json& fields() const;

 private:
  mutable std::optional<nlohmann::json> fields_;
};

struct Source {
  SourceKind kind = SourceKind::kTool;
  std::int64_t turn = 0;                 // the turn the message or output arrived in
  std::string_view tool;                 // kTool: the tool; kConstant: the constant's name
  std::string_view call_id;              // kTool
  std::string_view pointer;              // kTool: JSON pointer of the field ("" = whole output)
  bool token = false;                    // found inside a longer text, not as the whole field
  bool trusted = false;                  // per the pack's TrustPolicy
  std::shared_ptr<const Record> record;  // kTool with an enclosing object, else null
  // The text `tool`, `call_id` and `pointer` view: one per output or
  // constant, shared by all its sources (and kept alive by every copy of
  // one); a field's pointer is in it once, however many tokens the field has.
  std::shared_ptr<const std::string> names;

  // `get_webpage(c1) at $.text, untrusted`, `user message (turn 2), trusted`.
  std::string Describe() const;
  nlohmann::json ToJson() const;
};

// At most `max` bytes of `s`, cut on a character boundary, with every byte
// that is not valid UTF-8 replaced by '?' (so the result always serialises).
std::string CleanUtf8Prefix(std::string_view s, std::size_t max);

// "$.messages[2].body" for "/messages/2/body"; "$" for "".
std::string PointerToPath(std::string_view pointer);

struct IndexLimits {
  std::size_t max_output_bytes = std::size_t{2} << 20;  // text bytes of one output / message
  std::size_t max_sources = 500'000;
  std::size_t max_key_bytes = std::size_t{32} << 20;
  int max_depth = 64;  // nesting of an output's arrays and objects
};

class ProvenanceIndex {
 public:
  explicit ProvenanceIndex(TrustPolicy trust = {}, IndexLimits limits = {});

  // Every user message, kept per turn and never overwritten.
  struct UserMessage {
    std::int64_t turn = 0;
    std::string text;
    std::string normalized;    // NormalizeText(text)
    std::uint32_t source = 0;  // its Source (token = true) in the index
  };

  Status AddUserMessage(std::int64_t turn, std::string_view text);
  // `output` is the parsed output (a JSON string for text output).
  Status AddToolOutput(std::int64_t turn, std::string_view tool, std::string_view call_id,
                       const nlohmann::json& output);
  // A value the pack itself names (`name` says which constant).
  Status AddConstant(std::string_view name, std::string_view value);
  // Makes the index incomplete with `why` (not ok; kept only if the index is
  // still healthy), as an Add* that hits a limit does: every lookup returns
  // it from now on. For an index rebuilt from a conversation's persisted
  // sources, where a source this index refused was kept as its error alone.
  void MarkIncomplete(Status why);

  // Where `value` was seen, in arrival order: index hits, then user messages
  // that contain it as a word (token = true). Empty: seen nowhere. An error
  // when the index is incomplete (see above). The pointers stay valid until
  // the next Add*.
  Result<std::vector<const Source*>> SourcesOf(std::string_view value) const;
  // SourcesOf for a JSON argument: strings as they are, numbers and booleans
  // as their JSON text; null, arrays and objects are InvalidArgument.
  Result<std::vector<const Source*>> SourcesOfJson(const nlohmann::json& value) const;

  const std::vector<UserMessage>& user_messages() const;
  const TrustPolicy& trust() const { return trust_; }
  // Ok, or the LimitExceeded that made the index incomplete.
  const Status& health() const;
  // True once the index is incomplete (an Add* hit a limit, or
  // MarkIncomplete): the same answer as !health().ok(), but without walking
  // the queue (a queued item is within the limits, so the walk never makes
  // the index incomplete). O(1); for a writer deciding whether to keep a
  // source, where health() would make every Add eager.
  bool incomplete() const { return !health_.ok(); }
  std::size_t source_count() const;
  // Heap bytes held by the queue of outputs and messages not walked yet: what
  // a conversation whose rules never ask provenance keeps (about each
  // output's text plus a few bytes per JSON node). Does not walk. Bounded:
  // an Add* that could take the queue past max_key_bytes / 4 bytes of text
  // walks it first.
  std::size_t queued_bytes() const;
  // Changes whenever the index does (each Add*), and is unique across every
  // index of the process: derived answers cached under one stay right while
  // it holds.
  std::uint64_t generation() const { return generation_; }
  // Unique per index object across the process (a copy or a moved-to index
  // gets a new one), fixed for its life: with SourceId, a key under which a
  // caller may cache what it derived from one Source, which never changes
  // once added.
  std::uint64_t instance() const { return instance_.value; }
  // The position of `s` (from SourcesOf of this index) among its sources.
  std::size_t SourceId(const Source& s) const {
    return static_cast<std::size_t>(&s - sources_.data());
  }

 private:
  struct Walk;
  // What an Add* may add at most; `fits` false when it could hit a limit of
  // its own (too many bytes, too deep, a value of unknown size).
  struct Bound {
    std::size_t sources = 0;
    std::size_t key_bytes = 0;
    bool fits = true;
  };
  // A message or output queued for the walk.
  struct Pending {
    std::int64_t turn = 0;
    // 0: `text` is a user message; else `text` is the tool's name (this many
    // bytes), the call id (call_id_bytes) and the output, flattened
    // (internal/flat_json.h): one buffer per output.
    std::size_t tool_bytes = 0;
    std::size_t call_id_bytes = 0;
    std::string text;
    // Its share of pending_bound_.sources: the cheap bound measured on Add
    // (one per text byte), or, once `tight`, SourceBound's (one per place a
    // token can start).
    std::size_t sources = 0;
    bool tight = false;
  };
  // True when `b` together with the queue stays inside the limits.
  bool Fits(const Bound& b) const;
  void Queue(Pending p, const Bound& b, bool tight);
  // An Add whose cheap bound does not fit first tightens the queue's: every
  // queued item not yet tightened is counted again by SourceBound (each once),
  // so a long conversation of outputs nobody asks about stays queued.
  void TightenQueue();
  static std::size_t TightSources(const Pending& p);
  // Walks the queue (the state below is mutable for this: a question on a
  // const index walks what was added before it).
  void Flush() const;
  Status IndexOutput(std::int64_t turn, std::string_view tool, std::string_view call_id,
                     std::shared_ptr<const nlohmann::json> output) const;
  Status IndexUserMessage(std::int64_t turn, std::string_view text) const;
  Status Add(std::string_view value, Source source) const;
  // Add with the value already normalised (NormalizeValue).
  Status AddKey(const std::string& key, Source source) const;
  Status Fail(Status error) const;

  struct InstanceId {
    std::uint64_t value = New();
    InstanceId() = default;
    InstanceId(const InstanceId& /*other*/) : value(New()) {}
    InstanceId& operator=(const InstanceId& /*other*/) {
      value = New();
      return *this;
    }
    ~InstanceId() = default;
    static std::uint64_t New();
  };
  TrustPolicy trust_;
  IndexLimits limits_;
  InstanceId instance_;
  std::uint64_t generation_ = 0;
  mutable Status health_;
  mutable std::vector<Source> sources_;
  mutable std::unordered_map<std::string, std::vector<std::uint32_t>> by_value_;
  mutable std::size_t key_bytes_ = 0;
  mutable std::vector<UserMessage> user_messages_;
  mutable std::vector<Pending> pending_;
  mutable Bound pending_bound_;
  std::string flat_scratch_;  // AddToolOutput's, kept between calls
};

}  // namespace taskledger::provenance
