// Command: the durable record of one environment-changing tool call, written
// BEFORE the call executes (write-before-execute), so that after any crash the
// record says what was intended and how far it got.
//
// A command is identified within its run by its command_key: step, tool,
// target and a hash of the canonical JSON arguments. Reserving the same
// logical call twice therefore names the same record. Its idempotency key
// (run + command_key) is handed to the tool so the external system can
// deduplicate a call that is retried after a crash.
// States and the transitions between them: command_transition.h and
// docs/commands.md. Plain value types; thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "taskledger/base/digest.h"
#include "taskledger/base/status.h"
#include "taskledger/base/tool_call.h"
#include "taskledger/ledger/decision_record.h"

namespace taskledger {

// A run: one execution of an agent workflow, within a tenant.
struct RunId {
  std::string tenant = "default";
  std::string run;
  bool operator==(const RunId&) const = default;
  auto operator<=>(const RunId&) const = default;
};

enum class CommandState {
  kPending = 0,  // reserved, allowed, ready to lease
  kBlocked,      // waiting for a human: approval required, or escalated
  kApproved,     // a human approved it; ready to lease
  kLeased,       // a worker holds it and may be calling the tool
  kSucceeded,    // the call took effect; external id and evidence recorded
  kFailed,       // the tool refused definitively
  kUncertain,    // the outcome is unknown (timeout, dropped connection, crash)
  kCancelled,    // denied or cancelled with a reason; will never run
};
inline constexpr int kCommandStateCount = 8;

// "pending", "blocked", ... (as stored and as shown by the CLI).
std::string_view CommandStateName(CommandState s);
std::optional<CommandState> ParseCommandState(std::string_view name);
// Succeeded, failed and cancelled are final: no transition leaves them except
// an explicit replay of a failed command.
bool IsTerminal(CommandState s);

// The compensating call a succeeded command declares: run (LIFO) if the run fails.
struct CompensationSpec {
  std::string tool;
  std::string target;
  nlohmann::json arguments = nlohmann::json::object();
  bool operator==(const CompensationSpec&) const = default;
};

// A command's policy decision record, in one of two forms: typed, as a
// Session reserves it (shared and immutable: copying a Command or a spec
// does not copy the record, and no JSON tree is built for it on the write
// path), or the JSON a caller gave or a store read back. Both forms show as
// the same JSON (Json(): EncodeDecision of a typed record, codec.h), which is
// what stores keep and EncodeCommand shows, and two decisions are equal when
// their JSON is. Built from JSON implicitly, like the nlohmann::json member
// it replaces (`spec.decision = {{"decision", "allow"}}`). Immutable value;
// thread-compatible.
class CommandDecision {
 public:
  CommandDecision() = default;
  CommandDecision(nlohmann::json json) : json_(std::move(json)) {}  // NOLINT: implicit by design
  CommandDecision(nlohmann::json::initializer_list_t init) : json_(init) {}  // NOLINT: as json's
  explicit CommandDecision(std::shared_ptr<const DecisionRecord> record)
      : record_(std::move(record)) {}

  // The record as JSON: EncodeDecision of a typed one (a tree built per call).
  nlohmann::json Json() const;
  // The typed record; null for one given or read as JSON.
  const DecisionRecord* typed() const { return record_.get(); }
  // The record's verdict ("allow", "deny", "require_approval", ...), its
  // deciding rule and the id of the call it decided: read from the typed
  // record without building its JSON, or from the JSON form's string member;
  // empty when the record has none.
  std::string Verdict() const;
  std::string Rule() const;
  std::string CallId() const;
  bool operator==(const CommandDecision& other) const;

 private:
  nlohmann::json json_ = nlohmann::json::object();  // when record_ is null
  std::shared_ptr<const DecisionRecord> record_;
};

// What the caller asks to reserve: a call the policy allowed.
struct CommandSpec {
  RunId run;
  std::string step;  // the workflow step that issues the call ("refund-1")
  // The tool call it executes, in the one shape a call has from the adapter
  // that parsed it on: call.tool ("issue_refund"), call.arguments, and
  // call.id, the model's id of the tool call that proposed it ("call_0"),
  // empty for a command no tool call proposed (a workflow step's own).
  ToolCall call;
  std::string target;              // the natural key of what it changes ("order:A17")
  CommandDecision decision;        // the policy decision record
  std::string pack_version;        // the rule pack that decided
  bool requires_approval = false;  // the decision was require_approval: starts blocked
  std::optional<CompensationSpec> compensation;
  std::string compensates;  // for a compensating command: the command_key it undoes
};

struct Command {
  RunId run;
  uint64_t seq = 0;  // reservation order within the run, from 1
  std::string command_key;
  std::string idempotency_key;
  std::string step;
  // The call it executes (CommandSpec::call), its arguments normalized
  // (canonical). call.id is the tool call that reserved it: a later proposal
  // of the same logical call, under another id, finds this command and keeps
  // this id. It is empty for a command no tool call proposed, and for one
  // reserved before 0.2, whose decision record names the call instead
  // (decision.CallId()).
  ToolCall call;
  std::string target;
  CommandDecision decision;
  std::string pack_version;
  std::optional<CompensationSpec> compensation;
  std::string compensates;

  CommandState state = CommandState::kPending;
  uint32_t attempts = 0;       // leases taken so far
  uint64_t fencing_token = 0;  // grows with every lease; outcomes must carry the current one
  std::string lease_owner;
  int64_t lease_expires_ms = 0;
  std::string last_error;
  std::string external_id;
  nlohmann::json evidence;  // what proved success (tool result or reconciliation lookup)
  std::string approver, approval_reason;  // who approved or denied, and why
  bool escalated = false;                 // blocked because automatic recovery gave up
  std::string escalation_reason;
  std::string cancel_reason;
  uint32_t replays = 0;
  std::string replay_reason;
  uint64_t completed_seq = 0;  // order of success within the run (for LIFO compensation)
  int64_t created_ms = 0, updated_ms = 0;

  bool operator==(const Command&) const = default;
};

// step|tool|target|hash, the parts percent-encoded so '|' cannot be forged.
Result<std::string> MakeCommandKey(std::string_view step, std::string_view tool,
                                   std::string_view target, const nlohmann::json& arguments);
// "<tenant>:<run>/<command_key>" (tenant and run percent-encoded).
std::string MakeIdempotencyKey(const RunId& run, std::string_view command_key);

// The id of the tool call that reserved `c`: call.id, or for a command
// reserved before 0.2 the one its decision record names; empty when neither
// names one (a workflow step's own command).
std::string ReservingCallId(const Command& c);

// Builds the initial record for `spec` (validated, normalized, keys computed).
// InvalidArgument for an empty run, step or tool, or unencodable arguments.
Result<Command> NewCommand(const CommandSpec& spec, int64_t now_ms);

nlohmann::json EncodeCommand(const Command& c);
// Corruption, naming the field, for anything malformed.
Result<Command> DecodeCommand(const nlohmann::json& j);

}  // namespace taskledger
