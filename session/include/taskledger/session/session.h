// Session: the loop an agent runs each turn of one conversation, with the
// ledger, the extraction rules and the policy gate wired together.
//
//   RecordUserMessage(text)          user-message extraction ("yes" records the
//                                    confirmation condition)
//   HandleToolCall(call, execute)    Authorize the call; only if allowed, run
//                                    `execute` and extract from its output; a
//                                    call that did not run yields a tool-result
//                                    message explaining why
//   ResumeApproved(execute)          run what an operator approved (command ledger)
//   EndTurn()                        commit the rest of the turn
//
// Everything the turn did is staged into the turn record: the decision-log
// record of every check (Ledger::StageDecision), every call with its outcome
// (StageCall): "ok", "error" (the tool refused, or the call could not be
// made), "uncertain" (a write that threw or timed out: it may have taken
// effect), "denied"; under the command ledger also "deduplicated",
// "awaiting_approval", "cancelled", "escalated" and "in_progress" for a write
// that did not run now (see below); and every extraction error (StageError).
// An executor's exception never leaves HandleToolCall. When an
// environment-changing call is let through, the user's pending confirmation
// is consumed (the condition "confirmation" is removed).
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
// Command ledger (SessionOptions::commands.store set): every
// environment-changing call the policy allows is also a command of the run
// (default: the conversation), reserved with its decision record and the pack
// version, leased, run with its idempotency key (ToolContext; a plain
// ToolExecutor simply ignores it) and settled: succeeded (evidence: the
// output), failed (the tool refused, or the call could not be made),
// uncertain (it threw or timed out; reconciled at once through the lookup:
// found -> succeeded, not found -> released for a retry under the same key,
// no lookup -> escalated to an operator). The reservation comes before the
// write-ahead commit, so a call whose decision cannot be committed stays a
// ready command. The same logical call (step, tool, target, arguments; see
// SessionCommandOptions::step_of) proposed again returns the recorded outcome
// ("deduplicated") instead of running twice.
// Approvals: a require_approval decision reserves the command blocked and the
// model is told it waits. An operator approves or denies it (`taskledger
// commands approve|deny RUN KEY --reason ...`, CommandLedger::Approve/Deny);
// ResumeApproved() (or the model proposing the call again) then runs an
// approved command exactly once (the lease decides who runs it), staging the
// approval as its decision (rule taskledger.operator_approval) and the
// outcome under the original call id; a denied one is reported to the model
// once ("cancelled").
// Deferred settle (SessionCommandOptions::defer_settle, on by default; only
// with a command store that can pipeline, RedisCommandStore): a write's
// succeeded or failed outcome is SENT to the store as soon as the executor
// returns, and HandleToolCall returns without waiting for the store's answer;
// the answer is read at the session's next command-store operation: the next
// write through HandleToolCall, ResumeApproved, ProposeExternal,
// ReportOutcome, a journaled step, EndTurn, an explicit Flush(), or the
// destructor. So a write awaits one store round trip (the carried commit +
// reserve + lease), not two; and back-to-back writes one each: the next
// write's carried commit + reserve + lease is sent right behind the unread
// settle, on its connection, and one wait reads both answers. The server runs
// it only if the settle landed (the previous command in the state the settle
// leads to, under its fencing token); otherwise it writes nothing, the turn
// neither, and the call is denied as below. If that one wait fails (the
// connection broke, or timed out), the call is denied too, but the server may
// have run both: the new command may then be leased to this worker and the
// turn committed. It never runs twice: its lease runs out, the same call
// proposed again is reported as leased (or meets a turn conflict first), and
// the startup guard reconciles it, as after a crash between the send and the
// read. The result's `command` is then the record as the
// settle writes it (completed_seq excepted: 0 until read). Reading it first
// keeps every later operation on the settled record: the same call proposed
// again returns the recorded outcome. A settle the store refused (the lease
// was taken back) or whose answer was lost (the connection broke) is reported
// as the error of that next operation, naming the command (EndTurn, Flush,
// ResumeApproved, ReportOutcome, Journaled return it, with nothing else done;
// HandleToolCall and ProposeExternal deny the new call with
// kStoreUnavailableRule, its reason naming the command), and staged as a
// "command_unsettled" extraction error of the turn: never silent, reported
// once. Its command stays leased (or was settled, if only the answer was
// lost): the startup guard of the next session on the run reconciles it, as
// after a crash between execute and settle, which is also what a crash
// between the send and the read leaves. The destructor reads the answer but
// cannot report it: call Flush() (or EndTurn) last. An uncertain outcome is
// always settled at once (it is reconciled through the lookup right away),
// and so is every outcome with the memory store, ReportOutcome's, and a store
// that waits for replicas.
// Restart: Session::Open runs the startup guard (CommandLedger::Recover) for
// the run before it returns: leases of this worker id (a process that died
// mid-call) and expired leases become uncertain and are reconciled through
// the lookup; recovery() says what it found. A pending command left by a
// crash before its lease is not run by itself: it runs when the model
// proposes the call again. Open fails if the guard cannot run (store down).
//
// Journal (SessionCommandOptions::journal, with a command store): the loop
// passes each model response and every other non-deterministic value (clock
// readings, random ids) through Journaled() / JournaledNowMs() /
// JournaledRandom(). Each is recorded in the command store under the run at
// the next position before the loop sees it. A loop that crashed is resumed
// by opening a session on the same run and running the loop again from its
// start: journaled steps return what was recorded (the model is not asked
// again, the clock and the random source are not read), writes already made
// return their recorded outcome through the command ledger (with a journal,
// a succeeded write's message is its recorded output, as the first run saw
// it, not "Already done"), so the resumed
// loop takes the same branches and continues live where the record ends. A
// step asked with another request than the one recorded at its position is
// a Divergence error naming the position. Extraction from replayed
// messages re-applies the same values to the task state.
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
#include <exception>
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
#include "taskledger/commands/command.h"
#include "taskledger/commands/command_ledger.h"
#include "taskledger/commands/command_store.h"
#include "taskledger/commands/journal.h"
#include "taskledger/commands/tool_binding.h"
#include "taskledger/ledger/ledger.h"
#include "taskledger/ledger/store.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/call_class.h"
#include "taskledger/policy/checker.h"
#include "taskledger/policy/decision.h"
#include "taskledger/provenance/index.h"

namespace taskledger {

class Extractor;
class ExtractionRules;

// Rule ids of denials the session itself makes when the store cannot record
// a decision (see the file comment).
inline constexpr std::string_view kStoreUnavailableRule = "taskledger.store_unavailable";
inline constexpr std::string_view kStateConflictRule = "taskledger.state_conflict";
// The rule id of a write the policy allowed but the command ledger refused to
// record because its input is invalid (InvalidArgument / LimitExceeded from
// the reservation: an empty step, an argument too large); the store is fine
// and retrying the same call gets the same answer.
inline constexpr std::string_view kInvalidCommandRule = "taskledger.invalid_command";

// What a read-only call does while the store is unreachable.
enum class StoreDownReads {
  kAllow,  // run it; what it extracts stays staged until a commit succeeds
  kDeny,   // ping the store (Head) first; deny with kStoreUnavailableRule if it fails
};

// Writing through the command ledger (see the file comment). Without a
// store, writes run as before: gated and written ahead, but with no command
// record, no idempotency key and no approval queue.
struct SessionCommandOptions {
  CommandStore* store = nullptr;  // borrowed; must outlive the session
  // The run the session's commands belong to; default {tenant, conversation}.
  std::optional<RunId> run;
  // Names the lease holder. A restarted process that reuses it takes back its
  // predecessor's leases at once (they become uncertain and are reconciled);
  // another id waits for them to expire. Default: "session:" + the run.
  std::string worker_id;
  int64_t lease_ms = 30'000;
  uint32_t max_attempts = 3;  // leases per command before a not-found is escalated
  // Asks the external system whether an uncertain call took effect (by
  // command.idempotency_key or command.target). Unset: an uncertain command is
  // escalated to an operator at once.
  std::function<LookupResult(const Command&)> lookup;
  // The natural key of what a call changes (command.target, for lookups).
  // Unset: the first string among the arguments path, destination, uri, url,
  // name, id, order_id; else empty.
  std::function<std::string(const ProposedCall&)> target_of;
  // The workflow step of a call. The command is identified by step, tool,
  // target and arguments, so the default (the constant "call") makes the same
  // tool with the same arguments one command per run: proposed again, it
  // returns the recorded outcome. Return something that varies (a turn, a
  // call id) for tools a run may legitimately repeat.
  std::function<std::string(const ProposedCall&)> step_of;
  // Journal the loop's non-deterministic values (Session::Journaled,
  // JournaledNowMs, JournaledRandom) in `store` under the run: see the file
  // comment. Open fails with InvalidArgument if set without a store.
  bool journal = false;
  // Run the startup guard (CommandLedger::Recover) in Open, as the file
  // comment says. Off only for a caller that opens a session per request and
  // runs the guard itself where it matters (taskledger serve runs it when a
  // write is proposed, not when its outcome is reported): recovery() is then
  // nullopt and expired leases stay as they are until a guard runs.
  bool recover_on_open = true;
  // Send a write's settle without waiting for it (see "Deferred settle" in
  // the file comment). Off: HandleToolCall waits for every settle (two store
  // round trips per write, the settle's error in the call's own result).
  bool defer_settle = true;
  // Called after each durable step of a command (CommandLedgerOptions::observer):
  // "reserved", "leased", "outcome", "reconciled"; and "settle_sent" when a
  // deferred settle went out (its "outcome" follows when its answer is read).
  // For tracing and crash tests.
  std::function<void(std::string_view point, const Command&)> observer;
};

struct ProvenanceCarry;

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
  // checker is borrowed: it must outlive the session, stay on its thread and
  // keep the session's pack while the session lives (no SetPack to another
  // version): the session's decisions and ClassOf both come from it.
  // Sessions sharing it stay isolated: rules cannot keep state between checks.
  PolicyChecker* checker = nullptr;
  std::shared_ptr<const ExtractionRules> extraction_rules;
  SessionCommandOptions commands;
  // Whether each CallResult carries an executed call's output as text
  // (message). A driver that reads no message (a trace replay) turns this off
  // and saves encoding the output for every call; the turn records,
  // CallResult::decision_record, the command records and every denial's
  // message are the same either way.
  bool call_result_texts = true;
  // The provenance index another session on this conversation handed on
  // (TakeProvenance): Open takes its index (leaving it null) when it is for
  // this conversation and pack version and its head equals the store's head,
  // instead of indexing the conversation's persisted sources again. A carry
  // of this conversation also spares reading the whole head: the ledger
  // reads only the turns committed since the carried head (Ledger::Open with
  // a known head), when the store still holds its incarnation; then the
  // index is taken too, and given the sources of those turns only. Any other
  // carry is ignored (the index is rebuilt from the store).
  std::shared_ptr<ProvenanceCarry> provenance;
};

// A session's provenance index as of a committed version, for the next
// session on the same conversation (Session::TakeProvenance,
// SessionOptions::provenance): what a caller that opens a session per request
// (taskledger serve) keeps between requests so a request does not pay for the
// conversation's history.
struct ProvenanceCarry {
  ConversationId id;
  std::string pack_version;
  LedgerState head;  // the committed state whose sources the index holds
  // The turn that produced head and the incarnation it was read in
  // (Ledger::known_head; null / empty: not known): let the next Open read
  // only the turns committed since.
  std::shared_ptr<const TurnRecord> head_turn;
  std::string head_incarnation;
  std::unique_ptr<provenance::ProvenanceIndex> index;
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
// made at all (transport failure): it is recorded with outcome "error";
// except Timeout, which means it may have been made: outcome "uncertain" for
// an environment-changing call. An exception thrown by an executor never
// leaves the session: for an environment-changing call it is an uncertain
// outcome (the side effect may have happened), for a read-only one an error.
using ToolExecutor = std::function<Result<ToolOutput>(const ProposedCall&)>;

// What an executor may throw to report that the tool raised, with the status
// to record (a language binding's exception, say): like any exception, it is
// an uncertain outcome for an environment-changing call and an error for a
// read-only one, recorded with this status instead of a generic one.
class ToolRaised : public std::exception {
 public:
  explicit ToolRaised(Status status) : status_(std::move(status)) {}
  const char* what() const noexcept override { return status_.message().c_str(); }
  const Status& status() const { return status_; }

 private:
  Status status_;
};

// What the session tells an executor about the call beyond the call itself.
struct ToolContext {
  // Set for an environment-changing call under the command ledger: the key
  // the external system should deduplicate on (stable across retries of the
  // same command, across processes). Empty otherwise.
  std::string idempotency_key;
  std::string command_key;
  RunId run;
  uint32_t attempt = 0;  // the command's lease count (1 for a first try)
};
using ContextToolExecutor =
    std::function<Result<ToolOutput>(const ProposedCall&, const ToolContext&)>;

struct CallResult {
  PolicyDecision decision;
  // The decision record as staged into the turn: typed and shared with the
  // turn (copying a CallResult does not copy it). Json() builds its JSON form
  // (EncodeDecision, a tree per call); Verdict(), Rule() and CallId() read
  // without building one. A denial ResumeApproved reports (an operator
  // denied the command) carries the denied command's record. A result no
  // check decided (ReportOutcome before any check) carries none: Json() is
  // null, as it was in 0.1.
  CommandDecision decision_record = CommandDecision(nlohmann::json());
  bool executed = false;
  std::optional<ToolOutput> output;  // when executed and the executor returned one
  // The tool-result content to hand back to the model: the output (JSON text
  // or the raw string), or, for a call that did not run, why.
  std::string message;
  bool message_is_error = false;
  // Under the command ledger, for an environment-changing call: its record
  // as the session left it (succeeded, failed, uncertain, blocked, ...).
  std::optional<Command> command;
};

// What a client that runs a call itself reports back (Session::ReportOutcome).
struct ExternalOutcome {
  enum class Kind {
    kOk,         // the tool answered: `output`
    kToolError,  // the tool refused: `output` says why
    kNotMade,    // the call could not be made at all (nothing happened): `detail`
    kUncertain,  // it may or may not have taken effect (timeout, crash): `detail`
  };
  Kind kind = Kind::kOk;
  nlohmann::json output;
  std::string detail;
  // For a write under the command ledger: the command and the lease
  // (fencing token) ProposeExternal handed out. Empty / 0 otherwise.
  std::string command_key;
  uint64_t fencing_token = 0;
};

class Session {
 public:
  // Opens conversation `id` in `store` (which must outlive the Session) under
  // `pack`. The provenance index starts with the pack's constants and every
  // source the conversation's committed turns hold (user messages, tool
  // outputs: TurnRecord::sources), in order, so it answers as the sessions
  // that recorded them did; a source they refused for a limit makes it
  // incomplete with the same error. That costs one ReadTurns of the whole
  // history (O(turns)), unless options.provenance carries the index for this
  // very head. Errors: those of Ledger::Open and Store::ReadTurns
  // (Unavailable, Timeout, Corruption) and of PolicyChecker::Create /
  // ExtractionRules::FromJson (a broken pack).
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

  // Records the user's yes to `action`, given outside the conversation's text
  // (an MCP client's elicitation answer, a UI button): stages the condition
  // "confirmation" bound to the action's tool and arguments, as a confirmation
  // pattern of extract.json would, with `source_id` (e.g. "user:elicitation")
  // as its provenance. The next environment-changing call that runs consumes
  // it. Errors: the ledger's refusal of the update (an oversize action).
  Status RecordConfirmation(const ProposedCall& action, std::string_view text,
                            std::string_view source_id);

  // Gates `call` against the working state and stages the decision record.
  // Pure policy: never touches the store, never stages the call.
  CallResult Check(const ProposedCall& call);

  // Everything that must happen before `call` may run: Check; for an allowed
  // environment-changing call, the write-ahead commit (consuming the
  // confirmation); for an allowed read-only call under StoreDownReads::kDeny,
  // the store ping. A call that may not run is staged with outcome "denied"
  // (a store denial also stages its own decision record after the policy's).
  // For loops that execute calls themselves: run the call only if
  // result.decision.allowed(), then RecordToolOutput. Authorize never goes
  // through the command ledger (no command, key or approval queue): a loop
  // that wants those passes its executor to HandleToolCall.
  CallResult Authorize(const ProposedCall& call);

  // Authorize, then (only if allowed) execute, record the output and the call.
  // Under the command ledger an environment-changing call that is not egress
  // (CallClass::command()) goes through its command instead (see the file
  // comment): reserved, leased, executed with its idempotency key and
  // settled; a require_approval decision reserves it blocked; a command
  // already settled returns its recorded outcome.
  CallResult HandleToolCall(const ProposedCall& call, const ToolExecutor& execute);
  CallResult HandleToolCall(const ProposedCall& call, const ContextToolExecutor& execute);

  // Runs every command of the session's run an operator approved and that has
  // not run yet (exactly once: each is leased first; one released for a retry
  // after an uncertain outcome keeps its approval), and reports every
  // command an operator denied since the session last reported it. Each
  // becomes a call record in the current turn; the results are the tool
  // messages to hand the model. Call it at the start of a turn, or whenever a
  // loop that waits for approvals wakes up. Empty without a command store.
  // Errors: the command store's (Unavailable, Timeout); nothing is lost, a
  // later call picks up where this one stopped.
  Result<std::vector<CallResult>> ResumeApproved(const ToolExecutor& execute);
  Result<std::vector<CallResult>> ResumeApproved(const ContextToolExecutor& execute);

  // For a client that runs calls itself, in another process or request
  // (taskledger serve; session_external.cc). ProposeExternal is Authorize,
  // except that under the command ledger an environment-changing call the
  // policy allows (not an egress tool: as in HandleToolCall, that is gated
  // and recorded like a write but is no command, so the result has no
  // command and the call is reported without a command key) is reserved,
  // written ahead and leased, not run: the result holds the leased command
  // (command->state kLeased, its idempotency_key and fencing_token) and
  // `executed` stays false; the caller runs the call with
  // that key and reports it with ReportOutcome before the lease expires
  // (SessionCommandOptions::lease_ms). A require_approval decision reserves it
  // blocked, a settled command returns its recorded outcome, as
  // HandleToolCall does. A command leased to a call with the same call id is
  // handed out again (a client retrying its own proposal); under another id
  // it is reported in progress.
  CallResult ProposeExternal(const ProposedCall& call);
  // Records what the caller's call did: extraction and the call record as
  // HandleToolCall would stage them, and, for a leased command, its outcome
  // (kUncertain is reconciled through the lookup, else escalated). Reporting
  // the same lease again after its outcome was recorded only stages the call
  // again (a retried request). Errors: NotFound (no such command),
  // FailedPrecondition (the lease is not this one any more: it expired and
  // was taken back), the command store's (Unavailable, Timeout); nothing is
  // staged then.
  Result<CallResult> ReportOutcome(const ProposedCall& call, const ExternalOutcome& outcome);

  // The journal (SessionCommandOptions::journal): the value recorded at the
  // run's next journal position for (kind, request), or, when nothing is
  // recorded there yet, the one `produce` returns (recorded before it is
  // returned; a failing `produce` records nothing). Use it for every model
  // response (`request` = what the model is asked) and anything else a
  // resumed loop must see again unchanged. A session opened later on the same
  // run starts at position 1 again: a loop resumed after a crash, run from
  // its start, gets the recorded values without `produce` being called.
  // Errors: FailedPrecondition without a journal; Divergence when `kind` or
  // `request` differ from what is recorded at that position (the message
  // names the position and both requests; every later journaled call fails
  // the same way: the loop no longer follows its record); the command
  // store's (Unavailable, Timeout).
  Result<nlohmann::json> Journaled(const std::string& kind, const nlohmann::json& request,
                                   const std::function<Result<nlohmann::json>()>& produce);
  // The session clock's reading, journaled (kind "clock").
  Result<int64_t> JournaledNowMs();
  // A draw from `rng` (a random id, say), journaled (kind "random").
  Result<uint64_t> JournaledRandom(const std::function<uint64_t()>& rng);
  // Null without a journal. replayed_steps() counts the values answered
  // from the record since the session opened.
  const Journal* journal() const;

  // Records the output of a call that was allowed (extraction, StageCall with
  // "ok"/"error", confirmation consumed for an environment-changing call if
  // Authorize has not already done so).
  Status RecordToolOutput(const ProposedCall& call, const ToolOutput& output);

  // Reads the answer of a deferred settle still outstanding (see "Deferred
  // settle"); Ok when there is none. Errors: the settle's (Conflict: the
  // lease was taken back, a newer one exists; FailedPrecondition: the command
  // is no longer leased; Unavailable / Timeout: the answer was lost and
  // the outcome may or may not be recorded), naming the command; it is staged
  // as a command_unsettled error of the turn too. Cost: no wait when the
  // answer has arrived (the usual case after the caller's own work).
  Status Flush();

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
  // and then EndTurn() if they still hold. A deferred settle is read first:
  // its error (see Flush) is returned with nothing committed; call again.
  Result<uint64_t> EndTurn();
  // Reloads the head and re-applies the staged turn on top of it. The sources
  // of turns another writer committed meanwhile are not added to this
  // session's provenance index (values seen only there read as seen nowhere,
  // so rules asking for them deny); TakeProvenance then hands nothing on.
  Status Rebase();
  // Hands this session's provenance index on to a later session on the same
  // conversation (SessionOptions::provenance), when it holds exactly the
  // sources of the committed head: nothing staged, no Rebase. Null otherwise.
  // The session's own index is then empty and incomplete (every provenance
  // question fails, so rules asking one deny): call it last. Cost: O(1).
  std::shared_ptr<ProvenanceCarry> TakeProvenance();

  const ConversationId& id() const;
  const Ledger& ledger() const { return *ledger_; }
  const RulePack& pack() const { return *pack_; }
  // How the pack classes `tool` (CallClass): the class and egress a decision
  // on a call of it carries, from the checker's per-tool plan (worked out
  // once per tool name), so a caller deciding what to do before or after a
  // call does not scan the pack's globs again.
  CallClass ClassOf(const std::string& tool) const;
  const Clock& clock() const { return *clock_; }
  // Decision-log records and extraction errors staged in the current turn.
  const TurnRecord& pending() const { return ledger_->pending(); }
  // The decision record of the last call checked (Check, Authorize,
  // HandleToolCall), as staged into the turn: what an executor running under
  // HandleToolCall was allowed by. pending() may no longer hold it, because a
  // write's decision is committed before the write runs. Null before any.
  // Encoded on first use after each check (a loop that never asks pays nothing).
  const nlohmann::json& last_decision() const;
  // The command ledger's run and what its startup guard found when the
  // session opened; null / nullopt without a command store.
  const RunId* run() const;
  // The command store the session writes through; null without one.
  CommandStore* command_store() const;
  const std::optional<RecoveryReport>& recovery() const { return recovery_; }
  // Where values were seen in this conversation: every user message (per
  // turn) and tool output its committed turns hold and this session recorded,
  // under the pack's trust declarations. Rules ask it through call.sources &
  // co. (docs/rule-api.md "Provenance").
  const provenance::ProvenanceIndex& provenance() const { return *provenance_; }

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
  // confirmation, turns `result` into a store denial and returns false.
  // `consumed` receives the confirmation the commit consumed, if any.
  bool CommitBeforeWrite(const ProposedCall& call, CallResult& result,
                         std::optional<Entry>* consumed = nullptr);
  // Turns `result` into the session's own denial for `why`: kInvalidCommandRule
  // (InvalidArgument, LimitExceeded), kStateConflictRule (Conflict), else
  // kStoreUnavailableRule.
  void DenyForStore(const ProposedCall& call, const Status& why, CallResult& result);
  // Authorize after Check: the write-ahead commit or the store ping, and the
  // "denied" call record of a call that may not run.
  void FinishAuthorize(const ProposedCall& call, CallResult& result);
  // Runs an authorized call and records it in the turn; true if its outcome
  // is uncertain (it threw or timed out: it may have taken effect).
  bool ExecutePlain(const ProposedCall& call, bool writes, const ContextToolExecutor& execute,
                    const ToolContext& context, CallResult& result);
  // The command-ledger path of an environment-changing call (session_commands.cc).
  void HandleCommand(const ProposedCall& call, const ContextToolExecutor& execute,
                     CallResult& result);
  // Stages a call record for a command that did not run now, and tells the model why.
  void ReportCommand(const ProposedCall& call, const Command& command, CallResult& result);
  // Stages the operator's approval of `command` as the decision that lets it run.
  void StageApproval(const ProposedCall& call, const Command& command, CallResult& result);
  // ProposeExternal's command half: reserve, write ahead, lease (session_external.cc).
  void ProposeCommand(const ProposedCall& call, CallResult& result);
  Status RecoverCommands();
  void StageDecisionRecord(const ProposedCall& call, const PolicyDecision& d, CallResult& result);
  // Stages `record`, keeps it for last_decision() and the command a write
  // reserves (last_record_), and, when the caller reads it
  // (call_result_texts), encodes it into `result`.
  void StageDecision(DecisionRecord record, CallResult& result);
  void StageCallRecord(const ProposedCall& call, bool writes, std::string outcome);

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
  bool call_result_texts_;
  bool wrote_ahead_ = false;  // a write-ahead commit happened since the last EndTurn
  uint64_t view_epoch_ = 0;   // unique per session: part of the checker's ViewKey
  // The record of the last check as staged (shared with the command a
  // write reserves: ReserveReady); last_decision() encodes it into
  // last_decision_ on first use after each check.
  std::shared_ptr<const DecisionRecord> last_record_;
  mutable bool last_encoded_ = false;
  mutable nlohmann::json last_decision_;
  struct Commands;
  std::unique_ptr<Commands> commands_;  // null without a command store
  std::optional<RecoveryReport> recovery_;
  std::unique_ptr<provenance::ProvenanceIndex> provenance_;
  // False once the index may differ from the committed sources (Rebase).
  bool provenance_exact_ = true;
  // Gives the index a user message / tool output and stages it as a source
  // of the turn (a refused one as its error alone; none once the index is
  // incomplete: it keeps nothing more); an index refusal (a limit) is
  // staged as an extraction error too (session_provenance.cc).
  void IndexUserMessage(std::string_view text);
  void IndexToolOutput(const ProposedCall& call, const nlohmann::json& output);
  void NoteProvenance(const Status& indexed, std::string_view what);
  // Gives the index the sources of committed turns first..last, in order.
  Status IndexCommittedSources(uint64_t first, uint64_t last);
  // Takes carry's index if it is for this conversation and pack, and for
  // this head or one the ledger's head extends (Ledger::opened_from_known:
  // then the sources of the turns since are indexed too). False: not taken.
  Result<bool> AdoptProvenance(ProvenanceCarry& carry);
};

// The text a model reads for a call the gate did not let through: the tool,
// the deciding rule and its reason, and what to do next (for the session's own
// store denials: that nothing changed, and to try again later).
// A policy denial ends with `hint`, what to do next: the session passes its
// pack's denial_hint() (pack.json "denial_hint", kDefaultDenialHint without).
std::string DenialMessage(const ProposedCall& call, const PolicyDecision& decision,
                          std::string_view hint = kDefaultDenialHint);

}  // namespace taskledger
