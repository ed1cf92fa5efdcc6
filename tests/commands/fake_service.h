// FakeService: an in-process stand-in for an external system that honours
// idempotency keys, with scripted faults: the next calls can apply and answer,
// apply and then time out (effect without answer), time out before applying,
// or refuse. Lookups find applied effects by idempotency key. Counts effects
// per natural key, which is how the tests see a duplicate.
// Not thread-safe (test main thread only).
#pragma once

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "taskledger/commands/tool_binding.h"

namespace taskledger::testing {

class FakeService {
 public:
  enum class Fault { kNone, kTimeoutAfterEffect, kTimeoutBeforeEffect, kRefuse };

  void Script(std::vector<Fault> faults) {
    faults_.insert(faults_.end(), faults.begin(), faults.end());
  }
  void set_lookup_unreachable(bool v) { lookup_unreachable_ = v; }

  ToolBinding Binding() {
    return ToolBinding{[this](const Command& c) { return Call(c); },
                       [this](const Command& c) { return Lookup(c); }};
  }

  int calls() const { return calls_; }
  int lookups() const { return lookups_; }
  int effects_on(const std::string& target) const {
    auto it = effects_by_target_.find(target);
    return it == effects_by_target_.end() ? 0 : it->second;
  }
  // Targets in the order their effects were applied.
  const std::vector<std::string>& applied_order() const { return order_; }

 private:
  ToolOutcome Call(const Command& c) {
    ++calls_;
    Fault f = Fault::kNone;
    if (!faults_.empty()) {
      f = faults_.front();
      faults_.pop_front();
    }
    if (f == Fault::kRefuse) return ToolOutcome::Failed("insufficient funds");
    if (f == Fault::kTimeoutBeforeEffect) return ToolOutcome::Ambiguous("timeout");
    std::string id = Apply(c);
    if (f == Fault::kTimeoutAfterEffect) return ToolOutcome::Ambiguous("connection reset");
    return ToolOutcome::Succeeded(id, {{"id", id}, {"target", c.target}});
  }
  LookupResult Lookup(const Command& c) {
    ++lookups_;
    if (lookup_unreachable_) return LookupResult::Unknown("service unreachable");
    auto it = by_key_.find(c.idempotency_key);
    if (it == by_key_.end()) return LookupResult::NotFound();
    return LookupResult::Found(it->second, {{"id", it->second}});
  }
  // Honours the idempotency key: a repeat returns the original id, no new effect.
  std::string Apply(const Command& c) {
    auto it = by_key_.find(c.idempotency_key);
    if (it != by_key_.end()) return it->second;
    std::string id = "ext-" + std::to_string(by_key_.size() + 1);
    by_key_[c.idempotency_key] = id;
    ++effects_by_target_[c.target];
    order_.push_back(c.target);
    return id;
  }

  std::deque<Fault> faults_;
  bool lookup_unreachable_ = false;
  int calls_ = 0, lookups_ = 0;
  std::map<std::string, std::string> by_key_;
  std::map<std::string, int> effects_by_target_;
  std::vector<std::string> order_;
};

}  // namespace taskledger::testing
