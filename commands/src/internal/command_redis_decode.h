// Decoding of what RedisCommandStore reads back: a command hash (its spec
// JSON, its decision record's CBOR in a "decision" field when it is kept
// apart from the spec, plus one field per mutable attribute), a run's meta
// hash and a journal entry. A command's spec and decision never change after
// its reservation, so the store keeps the last pair it decoded (SpecCache):
// the write path's transitions (lease, settle) reply with the spec the
// reservation already decoded, and byte-equal ones are not decoded again.
// Thread-safe: the cache has its own mutex; the functions are pure.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "taskledger/base/status.h"
#include "taskledger/commands/command_store.h"
#include "taskledger/redis/client.h"

namespace taskledger::internal {

using Fields = std::map<std::string, std::string>;

// A field list reply (a run's meta hash) as a map; Corruption naming `what`
// for anything else.
Result<Fields> ToFields(const Reply& r, const std::string& what);

// The command a hash's immutable fields hold: DecodeCommand of its spec text,
// with the decision record of `decision` (the "decision" field's CBOR,
// DecodeDecisionBytes) when that is not empty; else the spec's own
// "decision" member, as every hash written before the field existed keeps
// it. Corruption for a spec that is not JSON or not a command, or a decision
// field that is not a decision record.
Result<Command> DecodeStoredSpec(const std::string& spec, std::string_view decision);

// DecodeStoredSpec, remembered for the last (spec, decision) seen: Decode of
// the same bytes again returns a copy without decoding. Errors as
// DecodeStoredSpec's (not remembered).
class SpecCache {
 public:
  Result<Command> Decode(const std::string& spec, std::string_view decision);
  // Remembers `decoded` as the decoding of `spec` and `decision`. REQUIRES:
  // `spec` is a text WriteCommandSpec gave for `decoded` (either spelling),
  // and `decision` the bytes WriteDecisionApart gave for its decision (then
  // the spec has none) or empty.
  void Remember(std::string spec, std::string decision, Command decoded);

 private:
  std::mutex mu_;
  std::string text_;  // empty: nothing remembered
  std::string decision_;
  Command decoded_;
};

// The commands this store holds leases on, as their lease (or a later fenced
// transition) left them, decoded: a fenced transition (succeed, fail, ...)
// with the same token asks its function for the fields it writes only
// ("delta") and applies them to this copy (ApplyHashFields), instead of
// reading back the whole hash with its spec. Sound because nothing but the
// holder of a lease token changes a command while that token stands (every
// other transition starts from another state, and a new lease takes a new
// token). Bounded: past kMax commands it starts again (a forgotten one costs
// a full reply). Thread-safe (own mutex).
class LeasedHashes {
 public:
  static constexpr size_t kMax = 1024;
  // The command `key` holds when it was remembered with this fencing token,
  // taken out (the transition that uses it puts back what it left, via Update).
  std::optional<Command> Take(const std::string& key, uint64_t token);
  // Remembers `command` as `key`'s under its fencing token while it is
  // leased; forgets `key` otherwise (the command left its lease).
  void Update(const std::string& key, const Command& command);
  void Forget(const std::string& key);

 private:
  std::mutex mu_;
  std::map<std::string, std::pair<uint64_t, Command>, std::less<>> hashes_;
};

// `j` as compact JSON text in `out`; true when parsing that text gives `j`
// back exactly (valid UTF-8 throughout, finite numbers, no binary values),
// false (and `out` unspecified) otherwise.
bool DumpLossless(const nlohmann::json& j, std::string& out);

// The command a hash holds, read from its field list reply (HGETALL, a
// tlc_* function's) without building a map; Corruption naming `what` for
// anything that is not a field list or not a command. `cache` (may be null)
// decodes its spec and decision (DecodeStoredSpec).
Result<Command> DecodeHash(const Reply& r, const std::string& what, SpecCache* cache);
// Its spec text and "decision" field (empty when the hash has none) -> the Command.
using SpecDecoder = std::function<Result<Command>(const std::string&, std::string_view)>;
// The same with the spec and decision decoded by `spec_of`.
Result<Command> DecodeHash(const Reply& r, const std::string& what, const SpecDecoder& spec_of);
// The mutable fields of a field list reply (a delta, or a whole hash whose
// spec is ignored) applied onto `c`, as DecodeHash reads them; a state only
// if the reply has one.
Status ApplyHashFields(const Reply& r, const std::string& what, Command& c);

Result<RunRecord> DecodeRun(const RunId& id, const Fields& f);
Result<JournalEntry> DecodeJournal(const std::string& text);

}  // namespace taskledger::internal
