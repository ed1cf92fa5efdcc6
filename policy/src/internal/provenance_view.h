// ProvenanceView: the provenance functions of the rule API's `call` object —
// call.sources(arg), call.sources_of(value), call.trusted(arg),
// call.untrusted_tokens(arg, kind...), call.explain(arg) and
// call.user_messages() (docs/rule-api.md, "Provenance") — answered from the
// session's ProvenanceIndex, plus the evidence of every lookup a check made,
// which a denial's decision record keeps. Without a bound index (a checker
// used outside a Session, e.g. `policy check`) the functions raise, so a rule
// relying on them fails closed. Not thread-safe: one per RuleRuntime.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lua.hpp"
#include "taskledger/base/tool_call.h"
#include "taskledger/provenance/index.h"

namespace taskledger::policy_internal {

class ProvenanceView {
 public:
  // Inside Protected(): sets the functions on the table at `call_data`.
  void Install(lua_State* L, int call_data);
  // For one check: the index (may be null: functions raise) and the call.
  void Bind(const provenance::ProvenanceIndex* index, const ProposedCall* call);
  void Unbind();
  // The lookups of the bound check as JSON: [{arg, value, sources: [...]}];
  // consumes them. Call before Unbind's successor Bind.
  nlohmann::json TakeEvidence();

  // For the Lua functions (provenance_view.cc).
  struct Lookup {
    std::string arg;  // "" for sources_of
    std::string value;
    std::vector<const provenance::Source*> sources;
  };
  const provenance::ProvenanceIndex* index() const { return index_; }
  const ProposedCall* call() const { return call_; }
  void Record(Lookup lookup);

 private:
  const provenance::ProvenanceIndex* index_ = nullptr;
  const ProposedCall* call_ = nullptr;
  std::vector<Lookup> lookups_;
};

}  // namespace taskledger::policy_internal
