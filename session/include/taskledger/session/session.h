// Session: the loop an agent runs each turn of one conversation, with the
// ledger, the extraction rules and the policy gate wired together.
//
//   RecordUserMessage(text)          user-message extraction ("yes" records the
//                                    confirmation condition)
//   HandleToolCall(call, execute)    gate the call (read-only tools pass); only
//                                    if allowed, run `execute`, extract from its
//                                    output; a denied call yields a tool-result
//                                    message explaining the violation
//   EndTurn()                        commit the turn as the next version
//
// Everything the turn did is staged into the turn record: the decision-log
// record of every check (Ledger::StageDecision), every call with its outcome
// "ok", "error" or "denied" (StageCall), and every extraction error
// (StageError). When an environment-changing call executes, the user's pending
// confirmation is consumed (the condition "confirmation" is removed). A
// session opened on a conversation that already has turns continues from its
// last committed version (the proposed action is not persisted).
//
// Not thread-safe: one Session per conversation per thread. The store and the
// rule pack are shared; the Session owns its PolicyChecker (a lua_State).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/ledger/clock.h"
#include "taskledger/ledger/ledger.h"
#include "taskledger/ledger/store.h"
#include "taskledger/policy/checker.h"
#include "taskledger/policy/decision.h"
#include "taskledger/policy/proposed_call.h"
#include "taskledger/policy/rule_pack.h"
#include "taskledger/status.h"

namespace taskledger {

class Extractor;
class ExtractionRules;

struct SessionOptions {
  CheckerLimits checker_limits;
  const Clock* clock = nullptr;  // default: SystemClock()
  // For many sessions opened one after another on one thread (replay):
  // building a checker (a lua_State running the pack) and compiling
  // extract.json cost more than a short conversation. Both must be for the
  // session's pack (same version) or Open fails with InvalidArgument. The
  // checker is borrowed: it must outlive the session and stay on its thread.
  // Sessions sharing it stay isolated: rules cannot keep state between checks.
  PolicyChecker* checker = nullptr;
  std::shared_ptr<const ExtractionRules> extraction_rules;
};

// Compiles the pack's extract.json (the empty rule set if it has none).
Result<std::shared_ptr<const ExtractionRules>> CompileExtractionRules(const RulePack& pack);

// What a tool returned: JSON, or the raw string for a text output; `error`
// when the tool refused.
struct ToolOutput {
  nlohmann::json output;
  bool error = false;
};

// Runs a call the gate allowed. A non-ok Status means the call could not be
// made at all (transport failure): it is recorded with outcome "error".
using ToolExecutor = std::function<Result<ToolOutput>(const ProposedCall&)>;

struct CallResult {
  PolicyDecision decision;
  nlohmann::json decision_record;  // as staged into the turn
  bool executed = false;
  std::optional<ToolOutput> output;  // when executed and the executor returned one
  // The tool-result content to hand back to the model: the output (JSON text
  // or the raw string), or, for a call that did not run, why.
  std::string message;
  bool message_is_error = false;
};

class Session {
 public:
  // Opens conversation `id` in `store` (which must outlive the Session) under
  // `pack`. Errors: those of Ledger::Open (Unavailable, Timeout, Corruption)
  // and of PolicyChecker::Create / ExtractionRules::FromJson (a broken pack).
  static Result<std::unique_ptr<Session>> Open(Store& store, ConversationId id,
                                               std::shared_ptr<const RulePack> pack,
                                               SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Extracts from a user message into the current turn. Extraction errors are
  // staged, not returned; a non-ok Status means the ledger refused an update.
  Status RecordUserMessage(std::string_view text);

  // The action the agent just proposed to the user ("Shall I cancel #W1?"):
  // the next user confirmation binds to it. Cleared once a message is recorded.
  void ProposeAction(ProposedCall action);
  const std::optional<ProposedCall>& proposed_action() const { return proposed_; }

  // Gates `call` against the working state and stages the decision record.
  CallResult Check(const ProposedCall& call);

  // Check, then (only if allowed) execute, record the output and the call.
  CallResult HandleToolCall(const ProposedCall& call, const ToolExecutor& execute);

  // For loops that execute calls themselves: records the output of a call
  // that Check allowed (extraction, StageCall with "ok"/"error", confirmation
  // consumed for an environment-changing call).
  Status RecordToolOutput(const ProposedCall& call, const ToolOutput& output);

  // Commits the turn; returns the new version. Any error leaves the turn
  // staged: Unavailable / Timeout may simply be retried (a retry of a commit
  // that landed but whose reply was lost is recognised by the store).
  // Conflict means another writer committed first: the decisions of this turn
  // were taken on a state that is no longer the head, so the session does not
  // silently re-apply them; call Rebase() and then EndTurn() if they still hold.
  Result<uint64_t> EndTurn();
  // Reloads the head and re-applies the staged turn on top of it.
  Status Rebase();

  const ConversationId& id() const;
  const Ledger& ledger() const { return *ledger_; }
  const RulePack& pack() const { return *pack_; }
  const Clock& clock() const { return *clock_; }
  // Decision-log records and extraction errors staged in the current turn.
  const TurnRecord& pending() const { return ledger_->pending(); }

 private:
  Session(std::unique_ptr<Ledger> ledger, std::shared_ptr<const RulePack> pack,
          std::unique_ptr<PolicyChecker> owned_checker, PolicyChecker* checker,
          std::unique_ptr<Extractor> extractor, const Clock& clock);
  void ConsumeConfirmation(const ProposedCall& call);

  std::unique_ptr<Ledger> ledger_;
  std::shared_ptr<const RulePack> pack_;
  std::unique_ptr<PolicyChecker> owned_checker_;  // null when borrowed
  PolicyChecker* checker_;
  std::unique_ptr<Extractor> extractor_;
  const Clock* clock_;
  std::optional<ProposedCall> proposed_;
};

// The text a model reads for a call the gate did not let through: the tool,
// the deciding rule and its reason, and what to do next.
std::string DenialMessage(const ProposedCall& call, const PolicyDecision& decision);

}  // namespace taskledger
