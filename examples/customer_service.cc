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
#include <cstring>
#include <deque>
#include <iostream>
#include <string>

#include "taskledger/ledger/redis_store.h"
#include "taskledger/render/state_block.h"
#include "taskledger/session/session.h"

using namespace taskledger;

namespace {

// The tools the agent may call: a tiny subscription backend.
struct SubscriptionBackend {
  std::string plan = "premium";
  bool cancelled = false;

  Result<ToolOutput> operator()(const ProposedCall& call) {
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
  const ConversationId id{"example", "customer-service-" + std::to_string(SystemClock().NowMs())};
  auto opened = Session::Open(**store, id, *pack);
  if (!opened) {
    std::cerr << "cannot open session: " << opened.error().ToString() << "\n";
    return 2;
  }
  Session& session = **opened;
  SubscriptionBackend backend;
  ScriptedModel model;
  ToolExecutor execute = [&backend](const ProposedCall& c) { return backend(c); };
  int denied = 0;
  bool downgraded = false;

  // Runs the model's planned calls for one turn, then commits the turn.
  auto run_turn = [&](const std::string& user) {
    std::cout << "\nturn " << session.ledger().turn() << "\n  user: " << user << "\n";
    if (Status s = session.RecordUserMessage(user); !s.ok()) std::cerr << s.ToString() << "\n";
    while (model.HasCall()) {
      ProposedCall call = model.NextCall();
      CallResult r = session.HandleToolCall(call, execute);
      std::cout << "  model calls " << call.tool << call.arguments.dump()
                << "\n    decision: " << OutcomeName(r.decision.outcome)
                << (r.decision.read_only ? " (read-only)" : "")
                << (r.decision.rule_id.empty() ? "" : " by " + r.decision.rule_id) << "\n";
      std::cout << "    tool result to the model: " << r.message << "\n";
      if (!r.executed) ++denied;
      if (r.executed && call.tool == "downgrade_subscription") downgraded = true;
      std::string say = model.Read(call, r);
      if (!say.empty()) std::cout << "  assistant: " << say << "\n";
    }
    auto v = session.EndTurn();
    if (!v) {
      std::cerr << "commit failed: " << v.error().ToString() << "\n";
      return false;
    }
    PrintState(session);
    return true;
  };

  model.Plan({"", "get_subscription", {{"customer_email", "ann@example.com"}}});
  model.Plan({"", "cancel_subscription", {{"subscription_id", "sub_1"}}});
  if (!run_turn("Hi, I'm ann@example.com. Please cancel my subscription sub_1.")) return 2;

  // The customer accepts the offer; the agent proposes the exact action.
  ProposedCall downgrade{
      "", "downgrade_subscription", {{"subscription_id", "sub_1"}, {"plan", "basic"}}};
  session.ProposeAction(downgrade);
  model.Plan(downgrade);
  if (!run_turn("yes")) return 2;

  const bool as_designed =
      denied == 2 && downgraded && !backend.cancelled && backend.plan == "basic";
  std::cout << "\n"
            << (as_designed ? "scenario complete" : "UNEXPECTED OUTCOME")
            << ": cancellation blocked " << denied << " times, plan is now " << backend.plan
            << "\n";
  if (store_url != "memory") (void)(*store)->DropConversation(id);
  return as_designed ? 0 : 1;
}
