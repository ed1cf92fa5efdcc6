// Command records: state and run-status names, canonical arguments, command and idempotency
// keys, the initial record of a reservation, the JSON codec of a record and
// the two forms of its decision record (CommandDecision). Pure functions;
// thread-safe.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>

#include "internal/command_encoding.h"
#include "taskledger/commands/command.h"
#include "taskledger/commands/command_store.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/redis/keys.h"

namespace taskledger {
namespace {

constexpr std::string_view kStateNames[kCommandStateCount] = {
    "pending", "blocked", "approved", "leased", "succeeded", "failed", "uncertain", "cancelled"};

std::string StringMember(const nlohmann::json& record, const char* member) {
  auto it = record.is_object() ? record.find(member) : record.end();
  return it != record.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

nlohmann::json CommandDecision::Json() const { return record_ ? EncodeDecision(*record_) : json_; }

std::string CommandDecision::Verdict() const {
  return record_ ? record_->decision : StringMember(json_, "decision");
}
std::string CommandDecision::Rule() const {
  return record_ ? record_->rule : StringMember(json_, "rule");
}
std::string CommandDecision::CallId() const {
  return record_ ? record_->call_id : StringMember(json_, "call_id");
}

bool CommandDecision::operator==(const CommandDecision& other) const {
  if (record_ && other.record_) return record_ == other.record_ || *record_ == *other.record_;
  if (!record_ && !other.record_) return json_ == other.json_;
  return Json() == other.Json();
}

namespace internal {

std::string PercentEncode(std::string_view in) { return PercentEncodeKeyPart(in); }

std::string CommandKeys::Command(std::string_view command_key) const {
  return "tlc:" + tag + ":cmd:" + std::string(command_key);
}

CommandKeys KeysOfRun(const RunId& run) {
  CommandKeys k;
  k.tag = ConversationHashTag(ConversationId{run.tenant, run.run});
  k.meta = "tlc:" + k.tag + ":meta";
  k.order = "tlc:" + k.tag + ":order";
  k.journal = "tlc:" + k.tag + ":journal";
  return k;
}

std::string RunsOfTenantKey(std::string_view tenant) {
  return "tlc:runs:{" + PercentEncode(tenant) + "}";
}

}  // namespace internal

std::string_view CommandStateName(CommandState s) {
  int i = static_cast<int>(s);
  return (i >= 0 && i < kCommandStateCount) ? kStateNames[i] : "unknown";
}

std::optional<CommandState> ParseCommandState(std::string_view name) {
  for (int i = 0; i < kCommandStateCount; ++i) {
    if (kStateNames[i] == name) return static_cast<CommandState>(i);
  }
  return std::nullopt;
}

bool IsTerminal(CommandState s) {
  return s == CommandState::kSucceeded || s == CommandState::kFailed ||
         s == CommandState::kCancelled;
}

Result<std::string> MakeCommandKey(std::string_view step, std::string_view tool,
                                   std::string_view target, const nlohmann::json& arguments) {
  auto canonical = CanonicalJson(arguments);
  if (!canonical) return canonical.error();
  return internal::PercentEncode(step) + "|" + internal::PercentEncode(tool) + "|" +
         internal::PercentEncode(target) + "|" + Sha256Hex(*canonical).substr(0, 32);
}

std::string MakeIdempotencyKey(const RunId& run, std::string_view command_key) {
  return internal::PercentEncode(run.tenant) + ":" + internal::PercentEncode(run.run) + "/" +
         std::string(command_key);
}

std::string ReservingCallId(const Command& c) {
  return c.call.id.empty() ? c.decision.CallId() : c.call.id;
}

Result<Command> NewCommand(const CommandSpec& spec, int64_t now_ms) {
  if (spec.run.run.empty()) return Status::InvalidArgument("command needs a run id");
  if (spec.run.tenant.empty()) return Status::InvalidArgument("command needs a tenant");
  if (spec.step.empty()) return Status::InvalidArgument("command needs a step");
  if (spec.call.tool.empty()) return Status::InvalidArgument("command needs a tool");
  if (spec.compensation && spec.compensation->tool.empty()) {
    return Status::InvalidArgument("a compensation needs a tool");
  }
  auto key = MakeCommandKey(spec.step, spec.call.tool, spec.target, spec.call.arguments);
  if (!key) return key.error();
  Command c;
  c.run = spec.run;
  c.command_key = std::move(key).value();
  c.idempotency_key = MakeIdempotencyKey(spec.run, c.command_key);
  c.step = spec.step;
  c.call.tool = spec.call.tool;
  c.target = spec.target;
  c.call.arguments = CanonicalValue(spec.call.arguments);
  c.call.id = spec.call.id;
  c.decision = spec.decision;
  c.pack_version = spec.pack_version;
  c.compensation = spec.compensation;
  if (c.compensation) {
    auto args = CanonicalJson(c.compensation->arguments);
    if (!args) return args.error();
    c.compensation->arguments = CanonicalValue(c.compensation->arguments);
  }
  c.compensates = spec.compensates;
  c.state = spec.requires_approval ? CommandState::kBlocked : CommandState::kPending;
  c.created_ms = c.updated_ms = now_ms;
  return c;
}

nlohmann::json EncodeCommand(const Command& c) {
  nlohmann::json j = {{"tenant", c.run.tenant},
                      {"run", c.run.run},
                      {"seq", c.seq},
                      {"command_key", c.command_key},
                      {"idempotency_key", c.idempotency_key},
                      {"step", c.step},
                      {"tool", c.call.tool},
                      {"target", c.target},
                      {"arguments", c.call.arguments},
                      {"decision", c.decision.Json()},
                      {"pack_version", c.pack_version},
                      {"compensates", c.compensates},
                      {"state", CommandStateName(c.state)},
                      {"attempts", c.attempts},
                      {"fencing_token", c.fencing_token},
                      {"lease_owner", c.lease_owner},
                      {"lease_expires_ms", c.lease_expires_ms},
                      {"last_error", c.last_error},
                      {"external_id", c.external_id},
                      {"evidence", c.evidence},
                      {"approver", c.approver},
                      {"approval_reason", c.approval_reason},
                      {"escalated", c.escalated},
                      {"escalation_reason", c.escalation_reason},
                      {"cancel_reason", c.cancel_reason},
                      {"replays", c.replays},
                      {"replay_reason", c.replay_reason},
                      {"completed_seq", c.completed_seq},
                      {"created_ms", c.created_ms},
                      {"updated_ms", c.updated_ms}};
  // Only when there is one: a command without it encodes as every earlier
  // release encoded it (the full spec text, command_spec_text.h).
  if (!c.call.id.empty()) j["call_id"] = c.call.id;
  if (c.compensation) {
    j["compensation"] = {{"tool", c.compensation->tool},
                         {"target", c.compensation->target},
                         {"arguments", c.compensation->arguments}};
  }
  return j;
}

namespace {

// Reads field `name` of type T into `out`; a missing field keeps the default.
template <class T>
Status ReadField(const nlohmann::json& j, const char* name, T& out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return Status::Ok();
  try {
    out = it->get<T>();
  } catch (const std::exception&) {
    return Status::Corruption(std::string("command field '") + name + "' has the wrong type");
  }
  return Status::Ok();
}

}  // namespace

Result<Command> DecodeCommand(const nlohmann::json& j) {
  if (!j.is_object()) return Status::Corruption("command record is not a JSON object");
  Command c;
  std::string state;
  Status s;
#define TL_READ(field, var) \
  if (!(s = ReadField(j, field, var)).ok()) return s
  TL_READ("tenant", c.run.tenant);
  TL_READ("run", c.run.run);
  TL_READ("seq", c.seq);
  TL_READ("command_key", c.command_key);
  TL_READ("idempotency_key", c.idempotency_key);
  TL_READ("step", c.step);
  TL_READ("tool", c.call.tool);
  TL_READ("target", c.target);
  TL_READ("call_id", c.call.id);
  TL_READ("pack_version", c.pack_version);
  TL_READ("compensates", c.compensates);
  TL_READ("state", state);
  TL_READ("attempts", c.attempts);
  TL_READ("fencing_token", c.fencing_token);
  TL_READ("lease_owner", c.lease_owner);
  TL_READ("lease_expires_ms", c.lease_expires_ms);
  TL_READ("last_error", c.last_error);
  TL_READ("external_id", c.external_id);
  TL_READ("approver", c.approver);
  TL_READ("approval_reason", c.approval_reason);
  TL_READ("escalated", c.escalated);
  TL_READ("escalation_reason", c.escalation_reason);
  TL_READ("cancel_reason", c.cancel_reason);
  TL_READ("replays", c.replays);
  TL_READ("replay_reason", c.replay_reason);
  TL_READ("completed_seq", c.completed_seq);
  TL_READ("created_ms", c.created_ms);
  TL_READ("updated_ms", c.updated_ms);
#undef TL_READ
  if (auto it = j.find("arguments"); it != j.end()) c.call.arguments = *it;
  if (auto it = j.find("decision"); it != j.end()) c.decision = CommandDecision(*it);
  if (auto it = j.find("evidence"); it != j.end()) c.evidence = *it;
  if (auto it = j.find("compensation"); it != j.end() && it->is_object()) {
    CompensationSpec comp;
    if (!(s = ReadField(*it, "tool", comp.tool)).ok()) return s;
    if (!(s = ReadField(*it, "target", comp.target)).ok()) return s;
    if (auto a = it->find("arguments"); a != it->end()) comp.arguments = *a;
    c.compensation = std::move(comp);
  }
  auto parsed = ParseCommandState(state);
  if (!parsed) return Status::Corruption("command has unknown state '" + state + "'");
  c.state = *parsed;
  if (c.command_key.empty()) return Status::Corruption("command has no command_key");
  return c;
}

std::string_view RunStatusName(RunStatus s) {
  switch (s) {
    case RunStatus::kRunning:
      return "RUNNING";
    case RunStatus::kCompensating:
      return "COMPENSATING";
    case RunStatus::kCompensated:
      return "COMPENSATED";
    case RunStatus::kFailed:
      return "FAILED";
  }
  return "UNKNOWN";
}

std::optional<RunStatus> ParseRunStatus(std::string_view name) {
  for (RunStatus s : {RunStatus::kRunning, RunStatus::kCompensating, RunStatus::kCompensated,
                      RunStatus::kFailed}) {
    if (RunStatusName(s) == name) return s;
  }
  return std::nullopt;
}

}  // namespace taskledger
