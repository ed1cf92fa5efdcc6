// Decoding of what RedisCommandStore reads back: a command hash (its spec
// JSON plus one field per mutable attribute), a run's meta hash and a journal
// entry. A command's spec never changes after its reservation, so the
// store keeps the last spec it decoded (SpecCache): the write path's
// transitions (lease, settle) reply with the spec the reservation already
// decoded, and a byte-equal spec is not parsed again. Thread-safe: the cache
// has its own mutex; the functions are pure.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "taskledger/base/status.h"
#include "taskledger/commands/command_store.h"
#include "taskledger/redis/client.h"

namespace taskledger::internal {

using Fields = std::map<std::string, std::string>;

// A field list reply (a run's meta hash) as a map; Corruption naming `what`
// for anything else.
Result<Fields> ToFields(const Reply& r, const std::string& what);

// The command decoded from its spec text alone (DecodeCommand of the parsed
// JSON), remembered for the last spec text seen: Decode of the same bytes
// again returns a copy without parsing. Corruption for a spec that is not JSON
// or not a command (not remembered).
class SpecCache {
 public:
  Result<Command> Decode(const std::string& spec);
  // Remembers `decoded` as the decoding of `spec`. REQUIRES: `spec` is a
  // text WriteCommandSpec gave for `decoded` (either spelling: DecodeCommand
  // of it is `decoded`).
  void Remember(std::string spec, Command decoded);

 private:
  std::mutex mu_;
  std::string text_;  // empty: nothing remembered
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
// decodes its spec.
Result<Command> DecodeHash(const Reply& r, const std::string& what, SpecCache* cache);
// The same with the spec decoded by `spec_of` (its own text -> its Command).
Result<Command> DecodeHash(const Reply& r, const std::string& what,
                           const std::function<Result<Command>(const std::string&)>& spec_of);
// The mutable fields of a field list reply (a delta, or a whole hash whose
// spec is ignored) applied onto `c`, as DecodeHash reads them; a state only
// if the reply has one.
Status ApplyHashFields(const Reply& r, const std::string& what, Command& c);

Result<RunRecord> DecodeRun(const RunId& id, const Fields& f);
Result<JournalEntry> DecodeJournal(const std::string& text);

}  // namespace taskledger::internal
