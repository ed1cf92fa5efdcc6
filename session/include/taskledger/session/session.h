// Session: the loop an agent runs each turn of one conversation, with the
// ledger, the extraction rules and the policy gate wired together.
//
//   RecordUserMessage(text)          user-message extraction ("yes" records the
//                                    confirmation condition)
//   HandleToolCall(call, execute)    Authorize the call; only if allowed, run
//                                    `execute` and extract from its output; a
//                                    call that did not run yields a tool-result
//                                    message explaining why
//   EndTurn()                        commit the rest of the turn
//
// Everything the turn did is staged into the turn record: the decision-log
// record of every check (Ledger::StageDecision), every call with its outcome
// "ok", "error" or "denied" (StageCall), and every extraction error
// (StageError). When an environment-changing call is let through, the user's
// pending confirmation is consumed (the condition "confirmation" is removed).
// A session opened on a conversation that already has turns continues from
// its last committed version (the proposed action is not persisted).
//
// Write-ahead (SessionOptions::commit_before_write, on by default): before an
// allowed environment-changing call runs, the session commits everything
// staged so far, including the allow decision and the consumed confirmation.
// The side effect therefore never happens without a durable record of the
// decision that let it through, and a crash after it cannot leave a "yes"
// behind that would authorise it again. If that commit fails the call does not
// run: it is denied with rule kStoreUnavailableRule (store down, slow or
// failing) or kStateConflictRule (another writer moved the head; Rebase), the
// confirmation is restored, and the turn stays staged for a later EndTurn. So
// a turn with N executed writes spans N+1 versions: one per write-ahead commit
// (what was staged up to the decision) and one at EndTurn (the outputs and
// call records after the last write). A turn record holding an allow decision
// but no call record for its call id is a call that started and whose outcome
// was never recorded (the process died): check the external system.
//
// Read-only calls never wait for the store unless
// SessionOptions::store_down_reads is kDeny; then each one first checks that
// the store answers (one Head round trip) and is denied with
// kStoreUnavailableRule if not.
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

#include "taskledger/base/clock.h"
#include "taskledger/base/status.h"
#include "taskledger/base/tool_call.h"
#include "taskledger/ledger/ledger.h"
#include "taskledger/ledger/store.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/checker.h"
#include "taskledger/policy/decision.h"

namespace taskledger {

class Extractor;
class ExtractionRules;

// Rule ids of denials the session itself makes when the store cannot record
// a decision (see the file comment).
inline constexpr std::string_view kStoreUnavailableRule = "taskledger.store_unavailable";
inline constexpr std::string_view kStateConflictRule = "taskledger.state_conflict";

// What a read-only call does while the store is unreachable.
enum class StoreDownReads {
  kAllow,  // run it; what it extracts stays staged until a commit succeeds
  kDeny,   // ping the store (Head) first; deny with kStoreUnavailableRule if it fails
};

struct SessionOptions {
  CheckerLimits checker_limits;
  // Commit the turn so far before running an allowed environment-changing
  // call, and deny the call if that commit fails. Off: the decision becomes
  // durable only at EndTurn, after the side effect (fewer store round trips,
  // for loops whose tools are safe to repeat or that keep their own journal).
  bool commit_before_write = true;
  StoreDownReads store_down_reads = StoreDownReads::kAllow;
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
  // Pure policy: never touches the store, never stages the call.
  CallResult Check(const ProposedCall& call);

  // Everything that must happen before `call` may run: Check; for an allowed
  // environment-changing call, the write-ahead commit (consuming the
  // confirmation); for an allowed read-only call under StoreDownReads::kDeny,
  // the store ping. A call that may not run is staged with outcome "denied"
  // (a store denial also stages its own decision record after the policy's).
  // For loops that execute calls themselves: run the call only if
  // result.decision.allowed(), then RecordToolOutput.
  CallResult Authorize(const ProposedCall& call);

  // Authorize, then (only if allowed) execute, record the output and the call.
  CallResult HandleToolCall(const ProposedCall& call, const ToolExecutor& execute);

  // Records the output of a call that was allowed (extraction, StageCall with
  // "ok"/"error", confirmation consumed for an environment-changing call if
  // Authorize has not already done so).
  Status RecordToolOutput(const ProposedCall& call, const ToolOutput& output);

  // Commits what the turn staged since the last commit; returns the version
  // that now holds the end of the turn. If nothing is staged and a
  // write-ahead commit already made the turn durable, nothing is written and
  // the current version is returned; otherwise (nothing staged, nothing
  // written ahead) an empty turn is committed, as Ledger::Commit does: a turn
  // happened. Any error leaves the turn staged: Unavailable / Timeout may
  // simply be retried (a retry of a commit that landed but whose reply was
  // lost is recognised by the store). Conflict means another writer committed
  // first: the decisions of this turn were taken on a state that is no longer
  // the head, so the session does not silently re-apply them; call Rebase()
  // and then EndTurn() if they still hold.
  Result<uint64_t> EndTurn();
  // Reloads the head and re-applies the staged turn on top of it.
  Status Rebase();

  const ConversationId& id() const;
  const Ledger& ledger() const { return *ledger_; }
  const RulePack& pack() const { return *pack_; }
  const Clock& clock() const { return *clock_; }
  // Decision-log records and extraction errors staged in the current turn.
  const TurnRecord& pending() const { return ledger_->pending(); }
  // The decision record of the last call checked (Check, Authorize,
  // HandleToolCall), as staged into the turn: what an executor running under
  // HandleToolCall was allowed by. pending() may no longer hold it, because a
  // write's decision is committed before the write runs. Null before any.
  const nlohmann::json& last_decision() const { return last_decision_; }

 private:
  Session(Store& store, std::unique_ptr<Ledger> ledger, std::shared_ptr<const RulePack> pack,
          std::unique_ptr<PolicyChecker> owned_checker, PolicyChecker* checker,
          std::unique_ptr<Extractor> extractor, const Clock& clock, const SessionOptions& options);
  void ConsumeConfirmation(const ProposedCall& call);
  // RecordToolOutput with the tool's class already known (HandleToolCall has
  // it from the decision, so a call is classified once).
  Status RecordOutput(const ProposedCall& call, const ToolOutput& output, bool writes);
  void RestoreConfirmation(const Entry& confirmation);
  // Commits the turn before a write runs; on failure restores the
  // confirmation and turns `result` into a store denial.
  void CommitBeforeWrite(const ProposedCall& call, CallResult& result);
  void DenyForStore(const ProposedCall& call, const Status& why, CallResult& result);

  Store& store_;
  std::unique_ptr<Ledger> ledger_;
  std::shared_ptr<const RulePack> pack_;
  std::unique_ptr<PolicyChecker> owned_checker_;  // null when borrowed
  PolicyChecker* checker_;
  std::unique_ptr<Extractor> extractor_;
  const Clock* clock_;
  std::optional<ProposedCall> proposed_;
  bool commit_before_write_;
  StoreDownReads store_down_reads_;
  bool wrote_ahead_ = false;      // a write-ahead commit happened since the last EndTurn
  nlohmann::json last_decision_;  // see last_decision()
};

// The text a model reads for a call the gate did not let through: the tool,
// the deciding rule and its reason, and what to do next (for the session's own
// store denials: that nothing changed, and to try again later).
std::string DenialMessage(const ProposedCall& call, const PolicyDecision& decision);

}  // namespace taskledger
