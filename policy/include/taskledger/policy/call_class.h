// How a rule pack classes one tool, as the session acts on a call of it: the
// pack's ToolClass and whether the tool is egress (pack.json tools.egress).
// Worked out once per tool name by a PolicyChecker (PolicyChecker::ClassOf,
// the same plan its decisions carry), so the callers after a decision do not
// scan the pack's globs again. A plain value; PackClassOf is the one place
// it is worked out from the pack.
#pragma once

#include <string_view>

#include "taskledger/pack/rule_pack.h"

namespace taskledger {

struct CallClass {
  ToolClass tool_class = ToolClass::kUnknown;
  bool egress = false;

  // Gated as environment-changing: anything not read_only (an undeclared
  // tool included, as the checker treats it).
  bool writes() const { return tool_class != ToolClass::kReadOnly; }
  // Made a command by a session with a command store: a write that is not
  // egress (egress sends data out but changes nothing to reconcile).
  bool command() const { return writes() && !egress; }

  bool operator==(const CallClass&) const = default;
};

// How `pack` classes `tool`, from its globs (a scan per call): what a
// PolicyChecker's per-tool plan holds. For a caller with no checker at hand
// (taskledger serve choosing what a request opens, caching it per loaded
// pack; a pack inspected from Python); with a session, ask Session::ClassOf.
inline CallClass PackClassOf(const RulePack& pack, std::string_view tool) {
  return CallClass{pack.Classify(tool), pack.IsEgress(tool)};
}

}  // namespace taskledger
