// GatingProxy: a client's retry of a call held for an operator's approval,
// matched against the command store rather than anything kept in the
// proxy's memory, so a proxy restarted between `taskledger commands approve`
// (or deny) and the retry answers it all the same, and a retry made before
// the operator decided makes no second held command. See HeldCallFor in
// internal/impl.h and docs/mcp-proxy.md ("Approvals").
//
// The held call keeps its call id (the JSON-RPC id of the request that was
// held, in the command's decision record); the retry is gated under that id,
// so the session's command step ("call-<id>", McpCommandOptions) names the
// same command and the session reports its recorded outcome. Whether the
// client was already given that outcome is read from the conversation's call
// records: a "deduplicated" record of the held call (the answer to a retry
// of a call that ran), or a second "cancelled" one (the first is the
// session's own report of the operator's denial).
#include "internal/impl.h"

namespace taskledger::mcp {
namespace {

// The client has been given the settled outcome of held call `call_id`.
bool OutcomeGiven(const Session& session, const Command& c, const std::string& call_id) {
  size_t deduplicated = 0, cancelled = 0;
  session.ledger().working().calls.ForEachNewestFirst([&](const CallRecord& r) {
    if (r.call.id == call_id) {
      if (r.outcome == "deduplicated") ++deduplicated;
      if (r.outcome == "cancelled") ++cancelled;
    }
    return true;
  });
  switch (c.state) {
    case CommandState::kSucceeded:
    case CommandState::kFailed:
      return deduplicated > 0;
    case CommandState::kCancelled:
      return cancelled > 1;
    default:  // still held, approved, running or uncertain: nothing final to give yet
      return false;
  }
}

}  // namespace

std::optional<std::string> GatingProxy::Impl::HeldCallFor(const ToolCall& call) {
  CommandStore* store = session.command_store();
  const RunId* run = session.run();
  if (store == nullptr || run == nullptr) return std::nullopt;
  auto listed = store->ListCommands(*run);
  if (!listed) {
    Log("cannot read the held commands of run " + run->run + ": " + listed.error().ToString() +
        "; " + call.tool + " is gated as a new call");
    return std::nullopt;
  }
  for (auto it = listed->rbegin(); it != listed->rend(); ++it) {  // newest first
    const Command& c = *it;
    if (c.call.tool != call.tool || c.call.arguments != call.arguments || !c.compensates.empty())
      continue;
    if (c.decision.Verdict() != "require_approval") continue;
    const std::string held = ReservingCallId(c);
    if (held.empty() || held == call.id) continue;
    if (!OutcomeGiven(session, c, held)) return held;
  }
  return std::nullopt;
}

}  // namespace taskledger::mcp
