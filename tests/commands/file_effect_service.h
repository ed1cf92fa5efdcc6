// FileEffectService: the crash harness's fake external system. Each effect is
// one file named by the hash of its idempotency key, created atomically with
// its full content (write a temp file, fsync, link() to the final name, fsync
// the directory), so an effect is either durably applied once or not at all,
// even if the caller is SIGKILLed mid-way. Applying again with the same key is
// a no-op that reports the original external id, which is also how Lookup
// finds it. The driver reads every effect back to count duplicates per
// natural key (target). Thread-compatible; safe across processes.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace taskledger::testing {

struct Effect {
  std::string idempotency_key;
  std::string target;
  std::string external_id;
};

class FileEffectService {
 public:
  explicit FileEffectService(std::string dir) : dir_(std::move(dir)) {}

  // Applies the effect unless the key was applied before; returns its external id,
  // or nullopt if the file system refused (an ambiguous outcome for the caller).
  std::optional<std::string> Apply(const std::string& idempotency_key, const std::string& target);
  // The effect recorded under the key, if any.
  std::optional<Effect> Lookup(const std::string& idempotency_key) const;
  // Every applied effect.
  std::vector<Effect> All() const;

 private:
  std::string PathOf(const std::string& idempotency_key) const;
  std::string dir_;
};

}  // namespace taskledger::testing
