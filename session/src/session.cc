// Session: the per-turn agent loop over Ledger, Extractor and PolicyChecker
// (contracts in session.h). This file opens a session and keeps the output
// half of the loop: user messages and tool outputs through the extractor into
// the ledger (StageExtraction) and the provenance index (IndexUserMessage,
// IndexToolOutput; the index's side is session_provenance.cc), the
// call records, the user's confirmation (recorded, consumed, restored), the
// executor run of a call that is not a command (ExecutePlain) and the end of
// a turn. The decision half (Check, Authorize, the write-ahead commit, the
// denials) is session_decision.cc; the command-ledger path of a write is
// session_commands.cc and session_command_lease.cc.
#include "taskledger/session/session.h"

#include <atomic>
#include <utility>

#include "internal/session_commands.h"
#include "taskledger/extract/extraction_rules.h"
#include "taskledger/extract/extractor.h"
#include "taskledger/provenance/constants.h"

namespace taskledger {
namespace {

constexpr std::string_view kConfirmationKey = "confirmation";

using session_internal::OutputText;
using session_internal::RunExecutor;

}  // namespace

Result<std::shared_ptr<const ExtractionRules>> CompileExtractionRules(const RulePack& pack) {
  // FromPack, not Empty(), for a pack without extract.json: the empty rule
  // set must carry the pack's version, or Open refuses it as another pack's.
  return ExtractionRules::FromPack(pack);
}

Result<std::unique_ptr<Session>> Session::Open(Store& store, ConversationId id,
                                               std::shared_ptr<const RulePack> pack,
                                               SessionOptions options) {
  if (!pack) return Status::InvalidArgument("a session needs a rule pack");
  const Clock& clock = options.clock != nullptr ? *options.clock : SystemClock();
  std::unique_ptr<PolicyChecker> owned;
  PolicyChecker* checker = options.checker;
  if (checker == nullptr) {
    auto created = PolicyChecker::Create(pack, options.checker_limits);
    if (!created) return created.error();
    owned = std::move(created).value();
    checker = owned.get();
  } else if (checker->pack()->version() != pack->version()) {
    return Status::InvalidArgument("the shared checker holds another version of the rule pack");
  }
  std::shared_ptr<const ExtractionRules> rules = std::move(options.extraction_rules);
  if (!rules) {
    auto compiled = CompileExtractionRules(*pack);
    if (!compiled) return compiled.error();
    rules = std::move(compiled).value();
  } else if (rules->pack_version() != pack->version()) {
    return Status::InvalidArgument(
        "the extraction rules belong to another version of the rule pack");
  }
  // A carried head of this conversation: only the turns since are read.
  const ProvenanceCarry* carry = options.provenance.get();
  auto ledger = carry != nullptr && carry->id == id
                    ? Ledger::Open(store, std::move(id), clock,
                                   HeadRead{carry->head, carry->head_turn, carry->head_incarnation})
                    : Ledger::Open(store, std::move(id), clock);
  if (!ledger) return ledger.error();
  ExtractorOptions extractor_options;
  extractor_options.clock = &clock;
  extractor_options.checker = checker;
  auto extractor = std::make_unique<Extractor>(std::move(rules), extractor_options);
  std::unique_ptr<Session> session(new Session(store, std::move(ledger).value(), std::move(pack),
                                               std::move(owned), checker, std::move(extractor),
                                               clock, options));
  bool adopted = false;
  if (options.provenance != nullptr) {
    auto taken = session->AdoptProvenance(*options.provenance);
    if (!taken) return taken.error();
    adopted = taken.value();
  }
  if (!adopted) {
    const uint64_t head = session->ledger_->version();
    if (head > 0) {
      if (Status indexed = session->IndexCommittedSources(1, head); !indexed.ok()) return indexed;
    }
  }
  if (options.commands.journal && options.commands.store == nullptr) {
    return Status::InvalidArgument("a session journal needs a command store (commands.store)");
  }
  if (SessionCommandOptions& c = options.commands; c.store != nullptr) {
    const ConversationId& conv = session->id();
    RunId run = c.run ? *c.run : RunId{conv.tenant, conv.conversation};
    CommandLedgerOptions ledger_options;
    ledger_options.worker_id =
        c.worker_id.empty() ? "session:" + run.tenant + "/" + run.run : c.worker_id;
    ledger_options.lease_ms = c.lease_ms;
    ledger_options.max_attempts = c.max_attempts;
    ledger_options.observer = c.observer;
    session->commands_ = std::make_unique<Commands>(*c.store, std::move(run), clock,
                                                    std::move(ledger_options), std::move(c));
    Commands& cmd = *session->commands_;
    if (cmd.options.journal) cmd.journal.emplace(cmd.store, cmd.run);
    if (cmd.options.recover_on_open) {
      if (Status recovered = session->RecoverCommands(); !recovered.ok()) return recovered;
    }
  }
  return session;
}

Session::Session(Store& store, std::unique_ptr<Ledger> ledger, std::shared_ptr<const RulePack> pack,
                 std::unique_ptr<PolicyChecker> owned_checker, PolicyChecker* checker,
                 std::unique_ptr<Extractor> extractor, const Clock& clock,
                 const SessionOptions& options)
    : store_(store),
      ledger_(std::move(ledger)),
      pack_(std::move(pack)),
      owned_checker_(std::move(owned_checker)),
      checker_(checker),
      extractor_(std::move(extractor)),
      clock_(&clock),
      commit_before_write_(options.commit_before_write),
      store_down_reads_(options.store_down_reads),
      call_result_texts_(options.call_result_texts),
      provenance_(std::make_unique<provenance::ProvenanceIndex>(pack_->trust())) {
  // A checker borrowed by many sessions, some on the same conversation (a
  // service opening one per request), must never take one session's
  // generation N for another's: each session gets a view epoch of its own.
  static std::atomic<uint64_t> next_epoch{1};
  view_epoch_ = next_epoch.fetch_add(1, std::memory_order_relaxed);
  // pack.json "constants" (validated when the pack loaded) are sources too.
  NoteProvenance(provenance::AddConstants(*provenance_,
                                          pack_->manifest().value("constants", nlohmann::json())),
                 "pack constants");
}

Session::~Session() {
  // A deferred settle still outstanding is read (its error, if any, can no
  // longer be reported: the startup guard of the run finds the command).
  if (commands_) (void)Commands::Settle(*this);
}

const ConversationId& Session::id() const { return ledger_->id(); }

Status Session::RecordUserMessage(std::string_view text) {
  nlohmann::json action = nullptr;
  if (proposed_) action = {{"tool", proposed_->tool}, {"arguments", proposed_->arguments}};
  proposed_.reset();
  IndexUserMessage(text);
  return StageExtraction(*ledger_, extractor_->ExtractUserMessage(text, action));
}

void Session::ProposeAction(ProposedCall action) { proposed_ = std::move(action); }

CommandStore* Session::command_store() const { return commands_ ? &commands_->store : nullptr; }

Status Session::RecordConfirmation(const ProposedCall& action, std::string_view text,
                                   std::string_view source_id) {
  Update yes;
  yes.category = Category::kCondition;
  yes.key = std::string(kConfirmationKey);
  yes.value = {{"text", std::string(text)},
               {"action", {{"tool", action.tool}, {"arguments", action.arguments}}}};
  yes.provenance.source = SourceKind::kUserMessage;
  yes.provenance.source_id = std::string(source_id);
  yes.provenance.verified = false;
  yes.provenance.pack_version = pack_->version();
  return ledger_->Stage(std::move(yes));
}

std::optional<Entry> Session::Commands::ConsumeForWrite(Session& s, const ProposedCall& call) {
  std::optional<Entry> confirmation;
  const auto& conditions = s.ledger_->working().of(Category::kCondition);
  if (auto it = conditions.find(kConfirmationKey); it != conditions.end())
    confirmation = it->second;
  s.ConsumeConfirmation(call);
  return confirmation;
}

CallResult Session::HandleToolCall(const ProposedCall& call, const ToolExecutor& execute) {
  return HandleToolCall(
      call, [&execute](const ProposedCall& c, const ToolContext&) { return execute(c); });
}

CallResult Session::HandleToolCall(const ProposedCall& call, const ContextToolExecutor& execute) {
  CallResult result = Check(call);
  const bool writes = !result.decision.read_only();
  // An egress tool is gated like a write but is not a command: it changes
  // nothing to reconcile, it only sends data out.
  if (writes && commands_ && !result.decision.egress &&
      (result.decision.allowed() || result.decision.outcome == Outcome::kRequireApproval)) {
    HandleCommand(call, execute, result);
    return result;
  }
  FinishAuthorize(call, result);
  if (result.decision.allowed()) ExecutePlain(call, writes, execute, ToolContext{}, result);
  return result;
}

bool Session::ExecutePlain(const ProposedCall& call, bool writes,
                           const ContextToolExecutor& execute, const ToolContext& context,
                           CallResult& result) {
  result.executed = true;
  session_internal::ExecutorRun ran = RunExecutor(execute, call, context);
  if (!ran.output) {
    // A call that may have been made is uncertain; one that could not be made is an error.
    const bool uncertain = writes && (ran.threw || ran.error.code() == StatusCode::kTimeout);
    StageCallRecord(call, writes, uncertain ? "uncertain" : "error");
    ledger_->StageError(
        ExtractionError{.source = "tool",
                        .tool = call.tool,
                        .call_id = call.id,
                        .rule = std::nullopt,
                        .code = uncertain ? "outcome_uncertain" : "execution_failed",
                        .message = ran.error.ToString()});
    result.message = uncertain ? "Error: the outcome of " + call.tool +
                                     " is unknown, it may or may not have taken effect: " +
                                     ran.error.ToString() + ". Check before trying it again."
                               : "Error: the call could not be made: " + ran.error.ToString();
    result.message_is_error = true;
    if (writes) ConsumeConfirmation(call);
    return uncertain;
  }
  if (call_result_texts_) result.message = OutputText(ran.output->output);
  result.message_is_error = ran.output->error;
  Status recorded = RecordOutput(call, *ran.output, writes);
  result.output = std::move(ran.output);
  if (!recorded.ok()) {
    // The ledger refused an extracted update (it never should for extractor
    // output); the call itself happened, so keep the evidence of that.
    ledger_->StageError(ExtractionError{.source = "tool",
                                        .tool = call.tool,
                                        .call_id = call.id,
                                        .rule = std::nullopt,
                                        .code = "stage_failed",
                                        .message = recorded.ToString()});
  }
  return false;
}

Status Session::RecordToolOutput(const ProposedCall& call, const ToolOutput& output) {
  return RecordOutput(call, output, ClassOf(call.tool).writes());
}

Status Session::RecordOutput(const ProposedCall& call, const ToolOutput& output, bool writes) {
  Status staged =
      StageExtraction(*ledger_, extractor_->ExtractParsedToolOutput(call, output.output));
  IndexToolOutput(call, output.output);
  StageCallRecord(call, writes, output.error ? "error" : "ok");
  if (writes) ConsumeConfirmation(call);
  return staged;
}

void Session::RestoreConfirmation(const Entry& confirmation) {
  // One that had already run out stays gone.
  if (!confirmation.LiveAt(ledger_->turn(), clock_->NowMs())) return;
  Update restore;
  restore.category = Category::kCondition;
  restore.key = std::string(kConfirmationKey);
  restore.value = confirmation.value;
  restore.provenance = confirmation.provenance;  // still the user's yes
  restore.expire_at_ms = confirmation.expires_at_ms;
  if (confirmation.expires_at_turn) {
    restore.expire_after_turns = *confirmation.expires_at_turn - ledger_->turn();
  }
  // A set of a non-empty key with a valid lifetime cannot fail.
  (void)ledger_->Stage(std::move(restore));
}

void Session::ConsumeConfirmation(const ProposedCall& call) {
  const auto& conditions = ledger_->working().of(Category::kCondition);
  if (conditions.find(kConfirmationKey) == conditions.end()) return;
  Update consume;
  consume.op = UpdateOp::kRemove;
  consume.category = Category::kCondition;
  consume.key = std::string(kConfirmationKey);
  consume.provenance.source = SourceKind::kAgent;
  consume.provenance.source_id = call.tool + "#" + call.id;
  consume.provenance.verified = true;
  consume.provenance.rule_id = "taskledger.confirmation_consumed";
  consume.provenance.pack_version = pack_->version();
  // A remove of a present key cannot fail (only an empty key is refused).
  (void)ledger_->Stage(std::move(consume));
}

Result<uint64_t> Session::EndTurn() {
  if (commands_) {
    if (Status settled = Commands::Settle(*this); !settled.ok()) return settled;
  }
  if (wrote_ahead_ && !ledger_->has_pending()) {
    wrote_ahead_ = false;
    return ledger_->version();
  }
  auto committed = ledger_->Commit();
  if (committed.has_value()) wrote_ahead_ = false;
  return committed;
}

Status Session::Rebase() {
  provenance_exact_ = false;
  return ledger_->Rebase();
}

}  // namespace taskledger
