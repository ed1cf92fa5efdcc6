// The conversation routes of the service (docs/openapi.yaml): open, user
// message, propose a call, report its outcome, end the turn. Each runs one
// Session operation inside WithSession (service.cc), which commits what it
// staged before the answer goes out.
#include <random>

#include "internal/service_impl.h"

namespace taskledger::serve {
namespace {

std::string NewConversationId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* kHex = "0123456789abcdef";
  std::string id = "c-";
  for (int i = 0; i < 2; ++i) {
    uint64_t v = rng();
    for (int j = 0; j < 16; ++j, v >>= 4) id.push_back(kHex[v & 15]);
  }
  return id;
}

// {"id", "tool", "arguments"} under `field`; arguments default to {}.
Result<ProposedCall> CallOf(const nlohmann::json& body, const char* field) {
  auto it = body.find(field);
  if (it == body.end() || !it->is_object()) {
    return Status::InvalidArgument(std::string("the field \"") + field + "\" must be an object");
  }
  ProposedCall call;
  auto tool = RequiredString(*it, "tool");
  if (!tool) return tool.error();
  call.tool = std::move(tool).value();
  if (it->contains("id")) {
    auto id = RequiredString(*it, "id");
    if (!id) return id.error();
    call.id = std::move(id).value();
  }
  call.arguments = it->value("arguments", nlohmann::json::object());
  if (!call.arguments.is_object()) {
    return Status::InvalidArgument(std::string("\"") + field + ".arguments\" must be an object");
  }
  return call;
}

nlohmann::json DecisionJson(const CallResult& r, const RulePack& pack) {
  const PolicyDecision& d = r.decision;
  return {{"outcome", OutcomeName(d.outcome)},
          {"allowed", d.allowed()},
          {"rule_id", d.rule_id},
          {"reason", d.reason},
          {"pack_version", d.pack_version},
          {"pack_name", pack.name()},
          {"read_only", d.read_only()},
          {"egress", d.egress}};
}

}  // namespace

Result<nlohmann::json> OpenConversation(const RouteContext& ctx) {
  ConversationId id{ctx.tenant, ""};
  if (ctx.body.contains("conversation")) {
    auto named = ConversationOf(ctx);
    if (!named) return named.error();
    id = std::move(named).value();
  } else {
    id.conversation = NewConversationId();
  }
  return WithSession(ctx, id, CommandUse::kGuarded, [&id](Session& s) -> Result<nlohmann::json> {
    nlohmann::json out = {{"conversation", id.conversation}, {"tenant", id.tenant}};
    if (s.recovery()) {
      out["recovered"] = {{"expired_leases", s.recovery()->expired_leases},
                          {"escalated", s.recovery()->escalated}};
    }
    return out;
  });
}

Result<nlohmann::json> RecordMessage(const RouteContext& ctx) {
  auto id = ConversationOf(ctx);
  if (!id) return id.error();
  auto text = ctx.body.find("text");
  if (text == ctx.body.end() || !text->is_string()) {
    return Status::InvalidArgument("the field \"text\" must be a string");
  }
  std::optional<ProposedCall> action;
  if (ctx.body.contains("proposed_action")) {
    auto a = CallOf(ctx.body, "proposed_action");
    if (!a) return a.error();
    action = std::move(a).value();
  }
  return WithSession(ctx, *id, CommandUse::kNone, [&](Session& s) -> Result<nlohmann::json> {
    if (action) s.ProposeAction(*action);
    if (Status st = s.RecordUserMessage(text->get_ref<const std::string&>()); !st.ok()) return st;
    return nlohmann::json{{"staged_updates", s.ledger().staged_updates()},
                          {"extraction_errors", EncodeExtractionErrors(s.pending().errors)}};
  });
}

Result<nlohmann::json> ProposeCall(const RouteContext& ctx) {
  auto id = ConversationOf(ctx);
  if (!id) return id.error();
  auto call = CallOf(ctx.body, "call");
  if (!call) return call.error();
  if (call->id.empty()) return Status::InvalidArgument("\"call.id\" is required");
  Metrics& m = ctx.service.metrics;
  // Only a call that may become a command (a write, not egress) opens the
  // command store and runs its startup guard.
  const bool command = ctx.loaded->ClassOf(call->tool).command();
  return WithSession(
      ctx, *id, command ? CommandUse::kGuarded : CommandUse::kNone,
      [&](Session& s) -> Result<nlohmann::json> {
        CallResult r = s.ProposeExternal(*call);
        if (r.decision.rule_id == kStateConflictRule) {
          return Status::Conflict(r.decision.reason);  // decide again on the new head
        }
        const bool leased = r.command && r.command->state == CommandState::kLeased;
        const bool execute =
            r.decision.allowed() && (r.decision.read_only() || leased || !r.command);
        (r.decision.outcome == Outcome::kAllow             ? m.decisions_allow
         : r.decision.outcome == Outcome::kRequireApproval ? m.decisions_approval
                                                           : m.decisions_deny)
            .fetch_add(1, std::memory_order_relaxed);
        if (leased) m.leases.fetch_add(1, std::memory_order_relaxed);
        nlohmann::json out = {{"decision", DecisionJson(r, *ctx.loaded->pack)},
                              {"decision_record", r.decision_record.Json()},
                              {"execute", execute},
                              {"message", r.message},
                              {"message_is_error", r.message_is_error}};
        if (r.command) out["command"] = CommandJson(*r.command);
        if (r.output) out["recorded_output"] = r.output->output;
        return out;
      });
}

Result<nlohmann::json> ReportOutcome(const RouteContext& ctx) {
  auto id = ConversationOf(ctx);
  if (!id) return id.error();
  auto call = CallOf(ctx.body, "call");
  if (!call) return call.error();
  if (call->id.empty()) return Status::InvalidArgument("\"call.id\" is required");
  ExternalOutcome outcome;
  const std::string status = ctx.body.value("status", std::string("ok"));
  if (status == "ok") {
    outcome.kind = ExternalOutcome::Kind::kOk;
  } else if (status == "error") {
    outcome.kind = ExternalOutcome::Kind::kToolError;
  } else if (status == "not_made") {
    outcome.kind = ExternalOutcome::Kind::kNotMade;
  } else if (status == "uncertain") {
    outcome.kind = ExternalOutcome::Kind::kUncertain;
  } else {
    return Status::InvalidArgument(
        "\"status\" must be one of ok, error, not_made, uncertain; got \"" + status + "\"");
  }
  outcome.output = ctx.body.value("output", nlohmann::json());
  outcome.detail = ctx.body.value("detail", std::string());
  if (ctx.body.contains("command_key")) {
    auto key = RequiredString(ctx.body, "command_key");
    if (!key) return key.error();
    outcome.command_key = std::move(key).value();
    auto token = ctx.body.find("fencing_token");
    if (token == ctx.body.end() || !token->is_number_unsigned()) {
      return Status::InvalidArgument(
          "\"fencing_token\" (an unsigned integer) goes with command_key");
    }
    outcome.fencing_token = token->get<uint64_t>();
  }
  const bool leased = !outcome.command_key.empty();
  return WithSession(
      ctx, *id, leased ? CommandUse::kUnguarded : CommandUse::kNone,
      [&](Session& s) -> Result<nlohmann::json> {
        auto r = s.ReportOutcome(*call, outcome);
        if (!r) return r.error();
        ctx.service.metrics.outcomes.fetch_add(1, std::memory_order_relaxed);
        nlohmann::json out = {{"message", r->message}, {"message_is_error", r->message_is_error}};
        if (r->command) out["command"] = CommandJson(*r->command);
        return out;
      });
}

Result<nlohmann::json> EndTurn(const RouteContext& ctx) {
  auto id = ConversationOf(ctx);
  if (!id) return id.error();
  return WithSession(ctx, *id, CommandUse::kNone, [&ctx](Session& s) -> Result<nlohmann::json> {
    if (Status late = PastDeadline(ctx, "before its commit"); !late.ok()) return late;
    auto v = s.EndTurn();
    if (!v) return v.error();
    return nlohmann::json::object();
  });
}

nlohmann::json CommandJson(const Command& c) { return EncodeCommand(c); }

}  // namespace taskledger::serve
