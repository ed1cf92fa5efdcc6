// Session: the per-turn agent loop over Ledger, Extractor and PolicyChecker
// (see session.h).
#include "taskledger/session/session.h"

#include <utility>

#include "taskledger/extract/extraction_rules.h"
#include "taskledger/extract/extractor.h"

namespace taskledger {
namespace {

constexpr std::string_view kConfirmationKey = "confirmation";

// The tool output as the model reads it: a string verbatim, JSON as text.
std::string OutputText(const nlohmann::json& output) {
  if (output.is_string()) return output.get<std::string>();
  return output.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

Result<std::shared_ptr<const ExtractionRules>> CompileExtractionRules(const RulePack& pack) {
  if (const nlohmann::json* spec = pack.extract_spec()) {
    return ExtractionRules::FromJson(*spec, pack.version());
  }
  return ExtractionRules::Empty();
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
    return Status::InvalidArgument("the extraction rules belong to another version of the rule pack");
  }
  auto ledger = Ledger::Open(store, std::move(id), clock);
  if (!ledger) return ledger.error();
  ExtractorOptions extractor_options;
  extractor_options.clock = &clock;
  extractor_options.checker = checker;
  auto extractor = std::make_unique<Extractor>(std::move(rules), extractor_options);
  return std::unique_ptr<Session>(new Session(std::move(ledger).value(), std::move(pack),
                                              std::move(owned), checker, std::move(extractor),
                                              clock));
}

Session::Session(std::unique_ptr<Ledger> ledger, std::shared_ptr<const RulePack> pack,
                 std::unique_ptr<PolicyChecker> owned_checker, PolicyChecker* checker,
                 std::unique_ptr<Extractor> extractor, const Clock& clock)
    : ledger_(std::move(ledger)),
      pack_(std::move(pack)),
      owned_checker_(std::move(owned_checker)),
      checker_(checker),
      extractor_(std::move(extractor)),
      clock_(&clock) {}

Session::~Session() = default;

const ConversationId& Session::id() const { return ledger_->id(); }

Status Session::RecordUserMessage(std::string_view text) {
  nlohmann::json action = nullptr;
  if (proposed_) action = {{"tool", proposed_->tool}, {"arguments", proposed_->arguments}};
  proposed_.reset();
  return StageExtraction(*ledger_, extractor_->ExtractUserMessage(text, action));
}

void Session::ProposeAction(ProposedCall action) { proposed_ = std::move(action); }

CallResult Session::Check(const ProposedCall& call) {
  CallResult result;
  ViewKey key{ledger_->id().tenant + "\x1f" + ledger_->id().conversation, ledger_->generation()};
  result.decision = checker_->Check(call, ledger_->working(), key, clock_->NowMs());
  DecisionContext ctx;
  ctx.conversation = ledger_->id().conversation;
  ctx.turn = ledger_->turn();
  ctx.version_seen = ledger_->version();
  ctx.staged_seen = ledger_->staged_updates();
  result.decision_record = DecisionLogRecord(result.decision, call, ctx);
  ledger_->StageDecision(result.decision_record);
  if (!result.decision.allowed()) {
    result.message = DenialMessage(call, result.decision);
    result.message_is_error = true;
  }
  return result;
}

CallResult Session::HandleToolCall(const ProposedCall& call, const ToolExecutor& execute) {
  CallResult result = Check(call);
  const bool writes = !result.decision.read_only;
  if (!result.decision.allowed()) {
    ledger_->StageCall(CallRecord{ledger_->turn(), call.id, call.tool, call.arguments, writes,
                                  "denied"});
    return result;
  }
  result.executed = true;
  Result<ToolOutput> output = execute(call);
  if (!output.has_value()) {
    ledger_->StageCall(CallRecord{ledger_->turn(), call.id, call.tool, call.arguments, writes,
                                  "error"});
    ledger_->StageError({{"source", "tool"},
                         {"tool", call.tool},
                         {"call_id", call.id},
                         {"code", "execution_failed"},
                         {"message", output.error().ToString()}});
    result.message = "Error: the call could not be made: " + output.error().ToString();
    result.message_is_error = true;
    if (writes) ConsumeConfirmation(call);
    return result;
  }
  result.message = OutputText(output->output);
  result.message_is_error = output->error;
  Status recorded = RecordToolOutput(call, *output);
  result.output = std::move(output).value();
  if (!recorded.ok()) {
    // The ledger refused an extracted update (it never should for extractor
    // output); the call itself happened, so keep the evidence of that.
    ledger_->StageError({{"source", "tool"},
                         {"tool", call.tool},
                         {"call_id", call.id},
                         {"code", "stage_failed"},
                         {"message", recorded.ToString()}});
  }
  return result;
}

Status Session::RecordToolOutput(const ProposedCall& call, const ToolOutput& output) {
  const bool writes = pack_->Classify(call.tool) != ToolClass::kReadOnly;
  Status staged = StageExtraction(*ledger_, extractor_->ExtractParsedToolOutput(call, output.output));
  ledger_->StageCall(CallRecord{ledger_->turn(), call.id, call.tool, call.arguments, writes,
                                output.error ? "error" : "ok"});
  if (writes) ConsumeConfirmation(call);
  return staged;
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

Result<uint64_t> Session::EndTurn() { return ledger_->Commit(); }

Status Session::Rebase() { return ledger_->Rebase(); }

std::string DenialMessage(const ProposedCall& call, const PolicyDecision& decision) {
  std::string rule = decision.rule_id.empty() ? std::string("policy") : decision.rule_id;
  std::string reason = decision.reason.empty() ? std::string("no reason given") : decision.reason;
  switch (decision.outcome) {
    case Outcome::kConfirm:
      return "Not executed: " + call.tool + " needs the user's explicit confirmation (" + rule +
             "). Ask the user: " + reason;
    case Outcome::kRequireApproval:
      return "Not executed: " + call.tool + " needs approval by a human operator (" + rule +
             "): " + reason + ". Tell the user the request is waiting for approval.";
    case Outcome::kAllow:
      return {};
    case Outcome::kDeny:
      break;
  }
  return "Error: policy violation, the call " + call.tool + " was blocked and made no change. "
         "Rule " + rule + ": " + reason +
         ". Resolve this first (for example, verify the user's identity, look up the missing "
         "facts, or ask the user), then try again if it is still appropriate.";
}

}  // namespace taskledger
