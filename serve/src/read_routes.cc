// The read routes of the service (docs/openapi.yaml): the state block, the
// versions and their turn records, a version's state, the diff of two
// versions, the decision records with their evidence, and the command
// ledger's list, approve and deny. Reads go to the store directly (no
// Session: nothing is staged or committed); approve and deny need an
// operator token (service.cc checks it).
#include <algorithm>
#include <functional>

#include "internal/service_impl.h"
#include "taskledger/base/clock.h"
#include "taskledger/commands/command_ledger.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/render/state_block.h"

namespace taskledger::serve {
namespace {

constexpr uint64_t kMaxTurnsPerRead = 200;

// An optional unsigned integer field; `fallback` when absent.
Result<uint64_t> OptionalVersion(const nlohmann::json& body, const char* field, uint64_t fallback) {
  auto it = body.find(field);
  if (it == body.end()) return fallback;
  if (!it->is_number_unsigned()) {
    return Status::InvalidArgument(std::string("\"") + field + "\" must be an unsigned integer");
  }
  return it->get<uint64_t>();
}

// The turns first..last (clamped to the head and to kMaxTurnsPerRead).
Result<std::vector<TurnRecord>> TurnsOf(const RouteContext& ctx, const ConversationId& id,
                                        uint64_t& head) {
  auto h = ctx.service.options.store->Head(id);
  if (!h) return h.error();
  head = *h;
  auto last = OptionalVersion(ctx.body, "to", head);
  if (!last) return last.error();
  uint64_t to = std::min(*last, head);
  auto first =
      OptionalVersion(ctx.body, "from", to > kMaxTurnsPerRead ? to - kMaxTurnsPerRead + 1 : 1);
  if (!first) return first.error();
  uint64_t from = std::max<uint64_t>(*first, 1);
  if (to == 0 || from > to) return std::vector<TurnRecord>{};
  if (to - from + 1 > kMaxTurnsPerRead) to = from + kMaxTurnsPerRead - 1;
  return ctx.service.options.store->ReadTurns(id, from, to);
}

// The body's conversation, its turns (TurnsOf), each added to a list by
// `add`: {"head": HEAD, field: LIST}.
Result<nlohmann::json> WithTurns(
    const RouteContext& ctx, const char* field,
    const std::function<void(const TurnRecord&, nlohmann::json&)>& add) {
  auto id = ConversationOf(ctx);
  if (!id) return id.error();
  uint64_t head = 0;
  auto turns = TurnsOf(ctx, *id, head);
  if (!turns) return turns.error();
  nlohmann::json list = nlohmann::json::array();
  for (const TurnRecord& t : *turns) add(t, list);
  return nlohmann::json{{"head", head}, {field, std::move(list)}};
}

Result<Command> Decide(const RouteContext& ctx, bool approve) {
  auto id = ConversationOf(ctx);
  if (!id) return id.error();
  auto key = RequiredString(ctx.body, "command_key");
  if (!key) return key.error();
  auto reason = RequiredString(ctx.body, "reason");
  if (!reason) return reason.error();
  std::string approver = ctx.body.value("approver", std::string("operator"));
  if (Status late = PastDeadline(ctx, "before its commit"); !late.ok()) return late;
  CommandLedger ledger(*ctx.service.options.command_store, SystemClock());
  RunId run{id->tenant, id->conversation};
  return approve ? ledger.Approve(run, *key, approver, *reason)
                 : ledger.Deny(run, *key, approver, *reason);
}

}  // namespace

Result<nlohmann::json> RenderState(const RouteContext& ctx) {
  auto id = ConversationOf(ctx);
  if (!id) return id.error();
  StateBlockOptions options;
  options.visibility = &ctx.loaded->visibility;  // the tenant's pack.json "render"
  const std::string format = ctx.body.value("format", std::string("markdown"));
  if (format == "plain") {
    options.format = StateBlockFormat::kPlain;
  } else if (format == "markdown") {
    options.format = StateBlockFormat::kMarkdown;
  } else if (format == "xml") {
    options.format = StateBlockFormat::kXml;
  } else {
    return Status::InvalidArgument("\"format\" must be plain, markdown or xml");
  }
  auto state = ctx.service.options.store->ReadHead(*id);
  if (!state) return state.error();
  auto block = RenderStateBlock(*state, SystemClock().NowMs(), options);
  if (!block) return block.error();
  return nlohmann::json{{"state_block", block->text},
                        {"chars", block->chars},
                        {"approx_tokens", block->approx_tokens},
                        {"version", state->version}};
}

Result<nlohmann::json> ReadVersions(const RouteContext& ctx) {
  return WithTurns(ctx, "turns", [](const TurnRecord& t, nlohmann::json& list) {
    list.push_back(EncodeTurn(t));
  });
}

Result<nlohmann::json> ReadState(const RouteContext& ctx) {
  auto id = ConversationOf(ctx);
  if (!id) return id.error();
  Store& store = *ctx.service.options.store;
  if (!ctx.body.contains("version")) {
    auto state = store.ReadHead(*id);
    if (!state) return state.error();
    return EncodeState(*state);
  }
  auto version = OptionalVersion(ctx.body, "version", 0);
  if (!version) return version.error();
  auto state = store.ReadVersion(*id, *version);
  if (!state) return state.error();
  return EncodeState(*state);
}

Result<nlohmann::json> ReadDiff(const RouteContext& ctx) {
  auto id = ConversationOf(ctx);
  if (!id) return id.error();
  Store& store = *ctx.service.options.store;
  auto head = store.Head(*id);
  if (!head) return head.error();
  auto from = OptionalVersion(ctx.body, "from", *head > 0 ? *head - 1 : 0);
  if (!from) return from.error();
  auto to = OptionalVersion(ctx.body, "to", *head);
  if (!to) return to.error();
  auto a = store.ReadVersion(*id, *from);
  if (!a) return a.error();
  auto b = store.ReadVersion(*id, *to);
  if (!b) return b.error();
  nlohmann::json out = EncodeDiff(Diff(*a, *b, SystemClock().NowMs()));
  return nlohmann::json{{"from", *from}, {"to", *to}, {"diff", std::move(out)}};
}

Result<nlohmann::json> ReadDecisions(const RouteContext& ctx) {
  return WithTurns(ctx, "decisions", [](const TurnRecord& t, nlohmann::json& list) {
    for (const DecisionRecord& d : t.decisions) {
      nlohmann::json record = EncodeDecision(d);
      record["turn"] = t.turn;
      list.push_back(std::move(record));
    }
  });
}

Result<nlohmann::json> ListCommands(const RouteContext& ctx) {
  auto id = ConversationOf(ctx);
  if (!id) return id.error();
  auto listed =
      ctx.service.options.command_store->ListCommands(RunId{id->tenant, id->conversation});
  if (!listed) return listed.error();
  const std::string state = ctx.body.value("state", std::string());
  nlohmann::json list = nlohmann::json::array();
  for (const Command& c : *listed) {
    if (!state.empty() && CommandStateName(c.state) != state) continue;
    list.push_back(CommandJson(c));
  }
  return nlohmann::json{{"commands", std::move(list)}};
}

Result<nlohmann::json> ApproveCommand(const RouteContext& ctx) {
  auto c = Decide(ctx, true);
  if (!c) return c.error();
  return nlohmann::json{{"command", CommandJson(*c)}};
}

Result<nlohmann::json> DenyCommand(const RouteContext& ctx) {
  auto c = Decide(ctx, false);
  if (!c) return c.error();
  return nlohmann::json{{"command", CommandJson(*c)}};
}

}  // namespace taskledger::serve
