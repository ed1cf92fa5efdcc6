// ReplayEvents / ReplayConversation (see replay.h).
#include "taskledger/session/replay.h"

#include <type_traits>
#include <unordered_map>

namespace taskledger {
namespace {

// A recorded result and the number of call events still to use it.
template <typename Event>
struct Recorded {
  Event* event = nullptr;
  size_t calls_left = 0;
};

// The replay over events the caller keeps (Event = const TraceEvent) or
// hands over (Event = TraceEvent): then each recorded output is moved into
// the session by the last call that uses it instead of being copied (tool
// outputs are most of a trace's bytes).
template <typename Event>
Result<ConversationReplay> Replay(Session& session, std::span<Event> events) {
  constexpr bool kMayTake = !std::is_const_v<Event>;
  ConversationReplay out;
  // The first result recorded after each call, by call id.
  std::unordered_map<std::string_view, Recorded<Event>> results;
  for (Event& e : events) {
    if (e.type == TraceEventType::kResult) results.try_emplace(e.id, Recorded<Event>{&e, 0});
  }
  if constexpr (kMayTake) {
    for (const Event& e : events) {
      if (e.type != TraceEventType::kCall) continue;
      if (auto it = results.find(std::string_view(e.id)); it != results.end()) {
        ++it->second.calls_left;
      }
    }
  }
  auto count_errors = [&] { out.extraction_errors += session.pending().errors.size(); };
  for (size_t i = 0; i < events.size(); ++i) {
    Event& e = events[i];
    ++out.events;
    switch (e.type) {
      case TraceEventType::kUser: {
        if (i + 1 < events.size() && events[i + 1].type == TraceEventType::kCall &&
            session.ClassOf(events[i + 1].tool).writes()) {
          session.ProposeAction(
              ProposedCall{events[i + 1].id, events[i + 1].tool, events[i + 1].arguments});
        }
        Status s = session.RecordUserMessage(e.text);
        if (!s.ok()) return s;
        break;
      }
      case TraceEventType::kCall: {
        auto found = results.find(std::string_view(e.id));
        // A handed-over call event is not read again (a user message looks
        // ahead at the call after it, before it): its fields move.
        ProposedCall call = [&] {
          if constexpr (kMayTake) {
            return ProposedCall{std::move(e.id), std::move(e.tool), std::move(e.arguments)};
          } else {
            return ProposedCall{e.id, e.tool, e.arguments};
          }
        }();
        Event* recorded = found == results.end() ? nullptr : found->second.event;
        // This call is the last to use its result: the output may be taken.
        [[maybe_unused]] const bool last_use =
            kMayTake && recorded != nullptr && --found->second.calls_left == 0;
        bool taken = false;
        ReplayedCall rc;
        if constexpr (kMayTake) {
          rc.expect = std::move(e.expect);
        } else {
          rc.expect = e.expect;
        }
        rc.has_result = recorded != nullptr;
        rc.version_seen = session.ledger().version();
        rc.turn = session.ledger().turn();
        CallResult r = session.HandleToolCall(call, [&](const ProposedCall&) -> Result<ToolOutput> {
          // A call the trace holds no result for (the gate should have
          // stopped it) ran without visible output.
          if (recorded == nullptr) return ToolOutput{nullptr, false};
          if constexpr (kMayTake) {
            if (last_use) {
              taken = true;
              return ToolOutput{std::move(recorded->output), recorded->error};
            }
          }
          return ToolOutput{recorded->output, recorded->error};
        });
        if (!r.executed && recorded != nullptr && !r.decision.read_only()) {
          // The gate would have stopped a call that the trace shows ran. The
          // trace is what happened, so the ledger follows it: later decisions
          // are judged against the world as it really was.
          if (taken && !r.output) {
            // The session ran the executor, reported the call as not run and
            // dropped its output: the recorded output is gone with it.
            return Status::Internal("replay: the recorded output of call " + call.id +
                                    " was taken by a call the session did not run");
          }
          Status s = session.RecordToolOutput(
              call, taken ? *r.output : ToolOutput{recorded->output, recorded->error});
          if (!s.ok()) return s;
          rc.recorded_despite_denial = true;
        }
        rc.outcome = r.decision.outcome;
        rc.rule_id = std::move(r.decision.rule_id);
        rc.rules_evaluated = r.decision.rules.size();
        rc.reason = std::move(r.decision.reason);
        rc.evaluations.reserve(r.decision.rules.size());
        for (const RuleEvaluation& ev : r.decision.rules) {
          rc.evaluations.emplace_back(ev.rule_id, ev.outcome);
          if (!ev.error) continue;
          rc.errored_rules.emplace_back(ev.rule_id.view());
          if (ev.rule_id.view() == rc.rule_id) rc.policy_error = true;
        }
        if (rc.rule_id == kCheckerErrorRule) rc.policy_error = true;
        rc.read_only = r.decision.read_only();
        rc.executed = r.executed;
        rc.latency_us = r.decision.latency_us;
        // The session is done with the call: its copies become the result's.
        rc.call_id = std::move(call.id);
        rc.tool = std::move(call.tool);
        rc.arguments = std::move(call.arguments);
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

}  // namespace

Result<ConversationReplay> ReplayEvents(Session& session, std::span<const TraceEvent> events) {
  return Replay(session, events);
}

Result<ConversationReplay> ReplayConversation(Session& session, const TraceConversation& trace) {
  auto r = ReplayEvents(session, trace.events);
  if (r.has_value()) r->conversation = trace.conversation;
  return r;
}

Result<ConversationReplay> ReplayConversation(Session& session, TraceConversation&& trace) {
  auto r = Replay(session, std::span<TraceEvent>(trace.events));
  if (r.has_value()) r->conversation = trace.conversation;
  return r;
}

}  // namespace taskledger
