// Replaying a recorded conversation (docs/trace-format.md) through a Session:
// the same extraction, gate and ledger as a live agent, with the recorded
// results standing in for the tools.
//
// A `user` event is recorded as a user message; when the next event is a call
// to an environment-changing tool, that call is first proposed to the session
// (the traces omit the agent's message that proposed it), so the user's "yes"
// binds to it. A `call` event is gated; if allowed it "executes" by taking the
// recorded `result` event with the same id as its output. If the gate denies a
// call that the trace nevertheless shows ran (it holds a result for it), the
// denial is reported and the recorded output is still extracted: the trace is
// what happened, and later calls are judged against that world. A turn
// is committed after each call and at the end; under the session's default
// write-ahead (SessionOptions::commit_before_write) an executed
// environment-changing call commits twice, its decision before it runs and
// its outcome after, as in a live session. Pure driver over its Session;
// not thread-safe (neither is the Session).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/policy/decision.h"
#include "taskledger/session/session.h"
#include "taskledger/session/trace.h"

namespace taskledger {

// One call event of a replay and what the gate made of it.
struct ReplayedCall {
  std::string call_id;
  std::string tool;
  nlohmann::json arguments;
  Outcome outcome = Outcome::kDeny;
  std::string rule_id;  // the deciding rule (for an allow: the first of those that passed)
  std::string reason;
  size_t rules_evaluated = 0;  // rules that ran on the call (for an allow: all passed)
  // Rules whose evaluation failed (raised, ran out of budget, returned a bad
  // value): each failed closed as a deny. `policy_error` is true when the
  // deciding rule is one of them (or the checker itself failed), so the
  // denial is the pack's bug, not the policy speaking.
  std::vector<std::string> errored_rules;
  bool policy_error = false;
  // What each rule that ran said, in evaluation order (ids shared with the
  // checker: no copy of the text).
  std::vector<std::pair<SharedString, Outcome>> evaluations;
  bool read_only = false;
  bool executed = false;
  bool has_result = false;               // the trace held a result for it
  bool recorded_despite_denial = false;  // denied, but the trace shows it ran
  uint64_t version_seen = 0;             // the committed version the decision was taken on
  uint64_t turn = 0;                     // the turn that recorded it
  int64_t latency_us = 0;
  std::optional<TraceExpectation> expect;
};

struct ConversationReplay {
  std::string conversation;
  std::vector<ReplayedCall> calls;  // every call event, in order
  uint64_t events = 0;              // events processed
  uint64_t version = 0;             // the last committed version
  uint64_t extraction_errors = 0;   // errors staged by extraction
};

// Drives `events` through `session`, committing as described above. Errors:
// the store's (a turn that cannot be committed ends the replay).
Result<ConversationReplay> ReplayEvents(Session& session, std::span<const TraceEvent> events);

// ReplayEvents over a whole conversation (its id is copied into the result).
Result<ConversationReplay> ReplayConversation(Session& session, const TraceConversation& trace);
// The same for a trace the caller no longer needs: each recorded output is
// moved into the session by the last call that uses it instead of copied.
// `trace` is left valid with every id, call and label as it was; only outputs
// may be emptied.
Result<ConversationReplay> ReplayConversation(Session& session, TraceConversation&& trace);

}  // namespace taskledger
