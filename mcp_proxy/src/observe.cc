// GatingProxy: what each gated tools/call leaves for operators besides the
// ledger: a structured record (ProxyOptions::call_log, JSON lines in the
// verb) and the in-process counters a metrics endpoint serves
// (ProxyOptions::metrics). See taskledger/mcp_proxy/proxy.h.
#include "internal/impl.h"
#include "taskledger/policy/decision.h"

namespace taskledger::mcp {

void GatingProxy::Impl::Observe(const ToolCall& call, const CallResult& result, int64_t duration_us,
                                bool forwarded, bool uncertain, const std::string& elicited) {
  const std::string decision(OutcomeName(result.decision.outcome));
  if (options.metrics != nullptr) {
    options.metrics->RecordCall(decision, forwarded, uncertain, duration_us);
  }
  if (!options.call_log) return;
  nlohmann::json record = {{"ts_ms", session.clock().NowMs()},
                           {"tenant", session.id().tenant},
                           {"conversation", session.id().conversation},
                           {"call_id", call.id},
                           {"tool", call.tool},
                           {"decision", decision},
                           {"rule", result.decision.rule_id},
                           {"reason", result.decision.reason},
                           {"executed", result.executed},
                           {"forwarded", forwarded},
                           {"uncertain", uncertain},
                           {"latency_us", duration_us}};
  if (result.command) {
    record["command_key"] = result.command->command_key;
    record["command_state"] = std::string(CommandStateName(result.command->state));
  }
  if (!elicited.empty()) record["elicitation"] = elicited;
  options.call_log(record);
}

}  // namespace taskledger::mcp
