// Drives the OpenAI Chat Completions adapter over recorded messages
// (examples/openai_recorded_messages.json) with no network: each recorded
// assistant message is parsed into tool calls (a call whose arguments are
// malformed JSON gets an error result, as the model would be told), each call
// is gated and, if allowed, executed against a local fake backend, and the
// role "tool" messages that would be sent back to the model are printed. A
// user message is recorded; a "yes" confirms the action the assistant just
// proposed in words, which the recording names in "x_proposed_action". A turn is committed after
// each assistant message.
//
//   example_openai_recorded [MESSAGES.json] [RULES_DIR]
// Exit 0 when every recorded message was handled; 2 on unreadable input.
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "taskledger/adapters/openai_chat.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/session/session.h"

using namespace taskledger;

namespace {

Result<ToolOutput> FakeBackend(const ProposedCall& call) {
  if (call.tool == "get_subscription") {
    return ToolOutput{{{"subscription_id", "sub_1"},
                       {"plan", "premium"},
                       {"status", "grace_period"},
                       {"days_remaining", 5}},
                      false};
  }
  if (call.tool == "verify_identity") return ToolOutput{{{"verified", true}}, false};
  if (call.tool == "downgrade_subscription") {
    return ToolOutput{{{"subscription_id", "sub_1"}, {"plan", call.arguments.value("plan", "")}},
                      false};
  }
  if (call.tool == "cancel_subscription") return ToolOutput{{{"status", "cancelled"}}, false};
  return ToolOutput{"Error: unknown tool", true};
}

}  // namespace

int main(int argc, char** argv) {
  const std::string messages_path =
      argc > 1 ? argv[1] : TASKLEDGER_EXAMPLES_DIR "/openai_recorded_messages.json";
  const std::string rules = argc > 2 ? argv[2] : TASKLEDGER_RULES_DIR "/subscription";
  std::ifstream in(messages_path);
  nlohmann::json recorded = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!recorded.is_object() || !recorded["messages"].is_array()) {
    std::cerr << "cannot read " << messages_path << "\n";
    return 2;
  }
  auto pack = RulePack::Load(rules);
  if (!pack) {
    std::cerr << "cannot load " << rules << ": " << pack.error().ToString() << "\n";
    return 2;
  }
  auto store = NewMemoryStore();
  auto session = Session::Open(*store, {"example", "openai-recorded"}, *pack);
  if (!session) {
    std::cerr << session.error().ToString() << "\n";
    return 2;
  }
  Session& s = **session;
  int blocked = 0, executed = 0, malformed = 0;

  for (const nlohmann::json& message : recorded["messages"]) {
    const std::string role = message.value("role", "");
    if (role == "user") {
      std::cout << "user: " << message.value("content", "") << "\n";
      if (Status st = s.RecordUserMessage(message.value("content", "")); !st.ok()) {
        std::cerr << st.ToString() << "\n";
      }
      continue;
    }
    if (role != "assistant") continue;
    auto parsed = openai_chat::ParseCalls(message);
    if (!parsed) {
      std::cerr << "unusable assistant message: " << parsed.error().ToString() << "\n";
      return 2;
    }
    if (parsed->empty()) {
      std::cout << "assistant: " << message.value("content", "") << "\n";
      // The agent framework recorded which action this text proposed, so the
      // user's "yes" that follows binds to exactly that call.
      if (auto p = message.find("x_proposed_action"); p != message.end() && p->is_object()) {
        s.ProposeAction(
            {"", p->value("tool", ""), p->value("arguments", nlohmann::json::object())});
      }
      continue;
    }
    std::vector<ToolResult> results;
    for (const CallError& e : parsed->errors) {
      ++malformed;
      results.push_back(e.ToResult());
    }
    for (const ToolCall& c : parsed->calls) {
      CallResult r = s.HandleToolCall(c, FakeBackend);
      std::cout << "assistant calls " << c.tool << " " << c.arguments.dump() << " -> "
                << OutcomeName(r.decision.outcome)
                << (r.decision.rule_id.empty() ? "" : " [" + r.decision.rule_id + "]") << "\n";
      (r.executed ? executed : blocked)++;
      results.push_back(ToolResult{c.id, r.message, r.message_is_error});
    }
    // What goes back to the model, in the wire format.
    std::cout << openai_chat::ProduceResults(results).dump(2) << "\n";
    auto v = s.EndTurn();
    if (!v) {
      std::cerr << "commit failed: " << v.error().ToString() << "\n";
      return 2;
    }
  }
  std::cout << "\n"
            << executed << " calls executed, " << blocked << " blocked, " << malformed
            << " with malformed arguments; ledger at version " << s.ledger().version() << "\n";
  return 0;
}
