// The "state" form of a policy test case (docs/rule-api.md, "Policy tests"),
// and the comparison of a decision with a case's "expect". Used by the pack
// tests and by the CLI's `policy test` / `policy check`. Pure; thread-safe.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"
#include "taskledger/ledger/state.h"
#include "taskledger/policy/decision.h"
#include "taskledger/provenance/index.h"

namespace taskledger {

// Builds a LedgerState from
//   {"version": N, "facts": {k: v}, "identifiers": {}, "constraints": {},
//    "conditions": {}, "calls": [{"tool", "arguments", "outcome"}]}
// (every member optional). A value written {"$entry": {...}} sets provenance
// and expiry explicitly; see docs/rule-api.md. `now_ms` anchors relative
// expiry ("expires_in_seconds"). InvalidArgument names the offending member.
Result<LedgerState> LoadTestState(const nlohmann::json& state, int64_t now_ms);

// True if a test case gives provenance sources ("user_messages" or "outputs").
bool HasTestProvenance(const nlohmann::json& test_case);

// Feeds `index` from a test case's provenance sources, so a "state" case can
// test rules asking call.sources & co.:
//   "user_messages": ["text", ...] or [{"text", "turn"?}, ...]  (turn: position, from 1)
//   "outputs": [{"tool", "output", "id"?, "turn"?}, ...]  (id "out<i>", turn 1)
// `output` is the decoded tool output (a string for a text output). Unknown
// members and wrong types are InvalidArgument naming the member; an output the
// index refuses (its limits) is that LimitExceeded.
Status LoadTestProvenance(const nlohmann::json& test_case, provenance::ProvenanceIndex& index);

// Compares `d` with an "expect" object {"decision", "rule"?, "reason_contains"?}.
// Ok if it matches, else FailedPrecondition saying what differed;
// InvalidArgument if `expect` is malformed.
Status MatchExpectation(const PolicyDecision& d, const nlohmann::json& expect);

}  // namespace taskledger
