// Policy test cases as the policy verbs read them (see policy_cases.h).
#include "policy_cases.h"

#include <algorithm>
#include <string>

#include "taskledger/base/clock.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/policy/checker.h"
#include "taskledger/policy/test_state.h"
#include "taskledger/provenance/constants.h"
#include "taskledger/session/replay.h"
#include "taskledger/session/session.h"
#include "taskledger/session/trace.h"

namespace taskledger::cli {

Result<ProposedCall> ParsePolicyCall(const nlohmann::json& j) {
  if (!j.is_object()) return Status::InvalidArgument("\"call\" must be an object");
  ProposedCall call;
  auto tool = j.find("tool");
  if (tool == j.end() || !tool->is_string())
    return Status::InvalidArgument("call: \"tool\" must be a string");
  call.tool = tool->get<std::string>();
  call.id = j.value("id", std::string("call"));
  auto args = j.find("arguments");
  if (args != j.end()) {
    if (!args->is_object()) return Status::InvalidArgument("call: \"arguments\" must be an object");
    call.arguments = *args;
  }
  return call;
}

Result<PolicyDecision> DecidePolicyCase(const std::shared_ptr<const RulePack>& pack,
                                        const nlohmann::json& c, const ProposedCall& call) {
  if (c.contains("state")) {
    const int64_t now = SystemClock().NowMs();
    auto state = LoadTestState(c["state"], now);
    if (!state) return state.error();
    // Sources the case states feed a provenance index, so call.sources & co.
    // answer; without them they raise (fail closed), as outside a Session.
    provenance::ProvenanceIndex index(pack->trust());  // outlives the checker
    const nlohmann::json constants = pack->manifest().value("constants", nlohmann::json());
    if (Status added = provenance::AddConstants(index, constants); !added.ok()) return added;
    auto checker = PolicyChecker::Create(pack);
    if (!checker) return checker.error();
    if (HasTestProvenance(c)) {
      if (Status fed = LoadTestProvenance(c, index); !fed.ok()) return fed;
      (*checker)->SetProvenance(&index);
    }
    return (*checker)->Check(call, *state, ViewKey{}, now);
  }
  auto events_json = c.find("events");
  if (events_json == c.end())
    return Status::InvalidArgument("a case needs \"events\" or \"state\"");
  if (HasTestProvenance(c)) {
    return Status::InvalidArgument(
        "\"user_messages\" and \"outputs\" go with \"state\"; \"events\" feed provenance "
        "themselves");
  }
  // Reuse the trace parser so a case's events obey exactly the trace format.
  nlohmann::json line = {{"conversation", "policy-test"}, {"events", *events_json}};
  auto trace = ParseTraceLine(line.dump());
  if (!trace) return trace.error();
  TraceEvent final_call;
  final_call.type = TraceEventType::kCall;
  final_call.id = call.id;
  final_call.tool = call.tool;
  final_call.arguments = call.arguments;
  trace->events.push_back(std::move(final_call));
  auto store = NewMemoryStore();
  auto session = Session::Open(*store, ConversationId{"default", "policy-test"}, pack);
  if (!session) return session.error();
  auto replay = ReplayConversation(**session, *trace);
  if (!replay) return replay.error();
  const ReplayedCall& last = replay->calls.back();
  PolicyDecision d;
  d.outcome = last.outcome;
  d.rule_id = last.rule_id;
  d.reason = last.reason;
  if (last.read_only) d.tool_class = ToolClass::kReadOnly;
  for (const auto& [rule, outcome] : last.evaluations) {
    RuleEvaluation& ev = d.rules.emplace_back();
    ev.rule_id = rule;
    ev.outcome = outcome;
    ev.error = std::find(last.errored_rules.begin(), last.errored_rules.end(), rule.str()) !=
               last.errored_rules.end();
  }
  return d;
}

}  // namespace taskledger::cli
