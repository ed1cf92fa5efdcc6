// ReplayEvents / ReplayConversation (see replay.h).
#include "taskledger/session/replay.h"

#include <unordered_map>

namespace taskledger {

Result<ConversationReplay> ReplayEvents(Session& session, std::span<const TraceEvent> events) {
  ConversationReplay out;
  // The first result recorded after each call, by call id.
  std::unordered_map<std::string_view, const TraceEvent*> results;
  for (const TraceEvent& e : events) {
    if (e.type == TraceEventType::kResult) results.try_emplace(e.id, &e);
  }
  auto count_errors = [&] { out.extraction_errors += session.pending().errors.size(); };
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    ++out.events;
    switch (e.type) {
      case TraceEventType::kUser: {
        if (i + 1 < events.size() && events[i + 1].type == TraceEventType::kCall &&
            session.pack().Classify(events[i + 1].tool) != ToolClass::kReadOnly) {
          session.ProposeAction(
              ProposedCall{events[i + 1].id, events[i + 1].tool, events[i + 1].arguments});
        }
        Status s = session.RecordUserMessage(e.text);
        if (!s.ok()) return s;
        break;
      }
      case TraceEventType::kCall: {
        ProposedCall call{e.id, e.tool, e.arguments};
        auto found = results.find(std::string_view(e.id));
        const TraceEvent* recorded = found == results.end() ? nullptr : found->second;
        ReplayedCall rc;
        rc.call_id = e.id;
        rc.tool = e.tool;
        rc.arguments = e.arguments;
        rc.expect = e.expect;
        rc.has_result = recorded != nullptr;
        rc.version_seen = session.ledger().version();
        rc.turn = session.ledger().turn();
        CallResult r = session.HandleToolCall(call, [&](const ProposedCall&) -> Result<ToolOutput> {
          // A call the trace holds no result for (the gate should have
          // stopped it) ran without visible output.
          if (recorded == nullptr) return ToolOutput{nullptr, false};
          return ToolOutput{recorded->output, recorded->error};
        });
        if (!r.executed && recorded != nullptr && !r.decision.read_only) {
          // The gate would have stopped a call that the trace shows ran. The
          // trace is what happened, so the ledger follows it: later decisions
          // are judged against the world as it really was.
          Status s = session.RecordToolOutput(call, ToolOutput{recorded->output, recorded->error});
          if (!s.ok()) return s;
          rc.recorded_despite_denial = true;
        }
        rc.outcome = r.decision.outcome;
        rc.rule_id = r.decision.rule_id;
        rc.rules_evaluated = r.decision.rules.size();
        rc.reason = r.decision.reason;
        rc.evaluations.reserve(r.decision.rules.size());
        for (const RuleEvaluation& ev : r.decision.rules) {
          rc.evaluations.emplace_back(ev.rule_id, ev.outcome);
          if (!ev.error) continue;
          rc.errored_rules.emplace_back(ev.rule_id.view());
          if (ev.rule_id.view() == rc.rule_id) rc.policy_error = true;
        }
        if (rc.rule_id == kCheckerErrorRule) rc.policy_error = true;
        rc.read_only = r.decision.read_only;
        rc.executed = r.executed;
        rc.latency_us = r.decision.latency_us;
        out.calls.push_back(std::move(rc));
        count_errors();
        auto committed = session.EndTurn();
        if (!committed) return committed.error();
        break;
      }
      case TraceEventType::kResult:
        // Consumed by its call (or skipped: its call was blocked or never made).
        break;
    }
  }
  if (session.ledger().has_pending()) {
    count_errors();
    auto committed = session.EndTurn();
    if (!committed) return committed.error();
  }
  out.version = session.ledger().version();
  return out;
}

Result<ConversationReplay> ReplayConversation(Session& session, const TraceConversation& trace) {
  auto r = ReplayEvents(session, trace.events);
  if (r.has_value()) r->conversation = trace.conversation;
  return r;
}

}  // namespace taskledger
