// A complete customer-service agent loop with a scripted model (no network):
// the subscription scenario of the design. The customer wants to cancel; the
// lookup shows the subscription is in its grace period; the cancellation is
// blocked (first: identity not verified; after verify_identity: the grace
// period), the model reads each denial and adapts; the customer accepts a
// downgrade and confirms it; the downgrade is allowed.
//
// Every turn prints the decisions taken and the task-state block the next
// prompt would carry. The rules are rules/subscription (pack.json,
// extract.json, policy.lua). Exit 0 when the scenario ends as described.
//
//   example_customer_service [RULES_DIR] [--store redis://127.0.0.1:6379]
// (with --store, the command records go to the same Redis)
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "taskledger/commands/command_ledger.h"
#include "taskledger/commands/memory_command_store.h"
#include "taskledger/commands/redis_command_store.h"
#include "taskledger/ledger/redis_store.h"
#include "taskledger/render/state_block.h"
#include "taskledger/session/session.h"

using namespace taskledger;

namespace {

// The tools the agent may call: a tiny subscription backend.
struct SubscriptionBackend {
  std::string plan = "premium";
  bool cancelled = false;
  std::map<std::string, double> refunds;  // by idempotency key: a repeat is not paid twice
  bool billing_times_out = false;         // answers nothing after taking a refund
  bool lookup_down = false;

  Result<ToolOutput> operator()(const ProposedCall& call, const ToolContext& ctx) {
    if (call.tool == "refund_subscription") {
      refunds.emplace(ctx.idempotency_key, call.arguments.value("amount", 0.0));
      if (billing_times_out) return Status::Timeout("billing did not answer within 5 s");
      return ToolOutput{{{"refund_id", "re_" + std::to_string(refunds.size())}}, false};
    }
    if (call.tool == "get_subscription") {
      return ToolOutput{{{"subscription_id", "sub_1"},
                         {"plan", plan},
                         {"status", "grace_period"},
                         {"days_remaining", 5}},
                        false};
    }
    if (call.tool == "verify_identity") return ToolOutput{{{"verified", true}}, false};
    if (call.tool == "cancel_subscription") {
      cancelled = true;
      return ToolOutput{{{"status", "cancelled"}}, false};
    }
    if (call.tool == "downgrade_subscription") {
      plan = call.arguments.value("plan", "basic");
      return ToolOutput{{{"subscription_id", "sub_1"}, {"plan", plan}}, false};
    }
    return ToolOutput{"Error: unknown tool " + call.tool, true};
  }

  // Did the call with this command's idempotency key take effect?
  LookupResult Lookup(const Command& c) const {
    if (lookup_down) return LookupResult::Unknown("billing lookup API unreachable");
    auto it = refunds.find(c.idempotency_key);
    if (it == refunds.end()) return LookupResult::NotFound();
    return LookupResult::Found("refund:" + c.idempotency_key, {{"amount", it->second}});
  }
};

// A scripted model: it has a plan of calls, and it reads the tool results the
// way a real model would, adapting when a denial tells it what to do.
class ScriptedModel {
 public:
  void Plan(ProposedCall call) { plan_.push_back(std::move(call)); }
  bool HasCall() const { return !plan_.empty(); }
  ProposedCall NextCall() {
    ProposedCall c = std::move(plan_.front());
    plan_.pop_front();
    c.id = "call_" + std::to_string(++calls_);
    return c;
  }
  // Reads a tool result. Returns what the model says to the user, if anything.
  std::string Read(const ProposedCall& call, const CallResult& r) {
    if (r.executed) return {};
    if (!r.message_is_error) return "That already went through; nothing was done twice.";
    if (r.message.find("waiting for approval") != std::string::npos) {
      return "Your request is waiting for a billing operator's approval; it goes through once "
             "they approve it.";
    }
    if (r.message.find("verify_identity") != std::string::npos) {
      // "call verify_identity first, then retry": do exactly that.
      plan_.push_front(ProposedCall{"", call.tool, call.arguments});
      plan_.push_front(
          ProposedCall{"", "verify_identity", {{"customer_email", "ann@example.com"}}});
      return {};
    }
    if (r.message.find("downgrade") != std::string::npos) {
      return "I can't cancel right now: your subscription is in its grace period. "
             "I can downgrade you to the basic plan instead. Shall I do that?";
    }
    return "Sorry, I can't do that: " + r.message;
  }

 private:
  std::deque<ProposedCall> plan_;
  int calls_ = 0;
};

// The command records live next to the conversations: in memory, or in the same Redis.
Result<std::unique_ptr<CommandStore>> OpenCommandStore(const std::string& url) {
  if (url == "memory") return NewMemoryCommandStore();
  RedisOptions options;
  options.url = url;
  return OpenRedisCommandStore(options);
}

void PrintState(const Session& s) {
  StateBlockOptions options;
  options.format = StateBlockFormat::kPlain;
  auto block = RenderStateBlock(s.ledger().head(), s.clock().NowMs(), options);
  std::cout << "  state after version " << s.ledger().version() << ":\n";
  std::string text = block ? block->text : block.error().ToString();
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    std::cout << "    | " << text.substr(start, end - start) << "\n";
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string rules = TASKLEDGER_RULES_DIR "/subscription";
  std::string store_url = "memory";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--store") == 0 && i + 1 < argc)
      store_url = argv[++i];
    else
      rules = argv[i];
  }
  auto pack = RulePack::Load(rules);
  if (!pack) {
    std::cerr << "cannot load " << rules << ": " << pack.error().ToString() << "\n";
    return 2;
  }
  auto store = OpenStore(store_url);
  if (!store) {
    std::cerr << "cannot open store: " << store.error().ToString() << "\n";
    return 2;
  }
  auto commands = OpenCommandStore(store_url);
  if (!commands) {
    std::cerr << "cannot open command store: " << commands.error().ToString() << "\n";
    return 2;
  }
  const ConversationId id{"example", "customer-service-" + std::to_string(SystemClock().NowMs())};
  SubscriptionBackend backend;
  SessionOptions options;
  options.commands.store = commands->get();  // every write becomes a command of the run
  options.commands.lookup = [&backend](const Command& c) { return backend.Lookup(c); };
  auto opened = Session::Open(**store, id, *pack, options);
  if (!opened) {
    std::cerr << "cannot open session: " << opened.error().ToString() << "\n";
    return 2;
  }
  std::unique_ptr<Session> session = std::move(opened).value();
  ScriptedModel model;
  ContextToolExecutor execute = [&backend](const ProposedCall& c, const ToolContext& ctx) {
    return backend(c, ctx);
  };
  int denied = 0;
  bool downgraded = false;

  auto show = [](const ProposedCall& call, const CallResult& r) {
    std::cout << "  model calls " << call.tool << call.arguments.dump()
              << "\n    decision: " << OutcomeName(r.decision.outcome)
              << (r.decision.read_only() ? " (read-only)" : "")
              << (r.decision.rule_id.empty() ? "" : " by " + r.decision.rule_id) << "\n";
    if (r.command) {
      std::cout << "    command " << CommandStateName(r.command->state) << ", idempotency key "
                << r.command->idempotency_key << "\n";
    }
    std::cout << "    tool result to the model: " << r.message << "\n";
  };
  // Runs the model's planned calls for one turn, then commits the turn.
  auto run_turn = [&](const std::string& user) {
    std::cout << "\nturn " << session->ledger().turn() << "\n  user: " << user << "\n";
    if (Status s = session->RecordUserMessage(user); !s.ok()) std::cerr << s.ToString() << "\n";
    while (model.HasCall()) {
      ProposedCall call = model.NextCall();
      CallResult r = session->HandleToolCall(call, execute);
      show(call, r);
      if (!r.executed && call.tool == "cancel_subscription") ++denied;
      if (r.executed && call.tool == "downgrade_subscription") downgraded = true;
      std::string say = model.Read(call, r);
      if (!say.empty()) std::cout << "  assistant: " << say << "\n";
    }
    auto v = session->EndTurn();
    if (!v) {
      std::cerr << "commit failed: " << v.error().ToString() << "\n";
      return false;
    }
    PrintState(*session);
    return true;
  };

  model.Plan({"", "get_subscription", {{"customer_email", "ann@example.com"}}});
  model.Plan({"", "cancel_subscription", {{"subscription_id", "sub_1"}}});
  if (!run_turn("Hi, I'm ann@example.com. Please cancel my subscription sub_1.")) return 2;

  // The customer accepts the offer; the agent proposes the exact action.
  ProposedCall downgrade{
      "", "downgrade_subscription", {{"subscription_id", "sub_1"}, {"plan", "basic"}}};
  session->ProposeAction(downgrade);
  model.Plan(downgrade);
  if (!run_turn("yes")) return 2;

  // A refund: the rule sends it to a billing operator; the command waits, blocked.
  ProposedCall refund{"", "refund_subscription", {{"subscription_id", "sub_1"}, {"amount", 9.99}}};
  model.Plan(refund);
  if (!run_turn("I was charged twice last month, please refund the 9.99.")) return 2;
  const RunId run = *session->run();
  auto waiting = (*commands)->ListCommands(run);
  std::string key;
  for (const Command& c : waiting ? *waiting : std::vector<Command>{}) {
    if (c.call.tool == "refund_subscription" && c.state == CommandState::kBlocked)
      key = c.command_key;
  }
  if (key.empty()) {
    std::cerr << "the refund is not waiting for approval\n";
    return 1;
  }
  // The operator approves it: `taskledger commands approve RUN KEY --reason ...`.
  std::cout << "\noperator: taskledger commands approve --tenant " << run.tenant << " " << run.run
            << " '" << key << "' --actor bob --reason 'duplicate charge confirmed'\n";
  CommandLedger operator_view(**commands, SystemClock());
  if (auto approved = operator_view.Approve(run, key, "bob", "duplicate charge confirmed");
      !approved) {
    std::cerr << "approve failed: " << approved.error().ToString() << "\n";
    return 1;
  }

  // Next turn: the session runs what was approved. Billing takes the refund
  // but never answers, and its lookup is down: the outcome is uncertain.
  backend.billing_times_out = true;
  backend.lookup_down = true;
  std::cout << "\nturn " << session->ledger().turn() << " (resuming approved commands)\n";
  auto resumed = session->ResumeApproved(execute);
  if (!resumed) {
    std::cerr << "resume failed: " << resumed.error().ToString() << "\n";
    return 1;
  }
  for (const CallResult& r : *resumed) show(refund, r);
  if (!session->EndTurn()) return 2;

  // The agent process restarts (billing and its lookup are back). Opening the
  // session runs the startup guard: the uncertain refund is looked up, found,
  // and recorded as succeeded before any new write is accepted.
  backend.billing_times_out = false;
  backend.lookup_down = false;
  session.reset();
  std::cout << "\nrestart: reopening conversation " << id.conversation << "\n";
  opened = Session::Open(**store, id, *pack, options);
  if (!opened) {
    std::cerr << "cannot reopen session: " << opened.error().ToString() << "\n";
    return 2;
  }
  session = std::move(opened).value();
  const int reconciled = session->recovery() ? session->recovery()->reconciled : 0;
  std::cout << "  startup guard: " << reconciled << " uncertain command(s) reconciled\n";
  // The model, unsure, asks for the refund again: the recorded outcome comes back.
  model.Plan(refund);
  if (!run_turn("Did my refund go through?")) return 2;

  const bool as_designed = denied == 2 && downgraded && !backend.cancelled &&
                           backend.plan == "basic" && backend.refunds.size() == 1 &&
                           reconciled == 1;
  std::cout << "\n"
            << (as_designed ? "scenario complete" : "UNEXPECTED OUTCOME")
            << ": cancellation blocked " << denied << " times, plan is now " << backend.plan
            << ", refund approved by bob paid " << backend.refunds.size()
            << " time(s), reconciled after the restart: " << reconciled << "\n";
  if (store_url != "memory") {
    (void)(*store)->DropConversation(id);
    (void)(*commands)->DropRun(run);
  }
  return as_designed ? 0 : 1;
}
