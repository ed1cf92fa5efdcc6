// `taskledger audit explain` (see audit_explain.h): the evidence chain of a
// call's decisions from the conversation's history, as text or JSON.
#include "audit_explain.h"

#include <iostream>

#include "audit_history.h"
#include "cli_common.h"
#include "taskledger/ledger/codec.h"

namespace taskledger::cli {
namespace {

std::string Str(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

void PrintRead(const nlohmann::json& r) {
  std::cout << "      " << Str(r, "category") << " " << Str(r, "key");
  if (!r.value("present", false)) {
    std::cout << ": absent\n";
    return;
  }
  if (r.contains("value")) std::cout << " = " << r["value"].dump();
  std::cout << "  " << (r.value("verified", false) ? "verified" : "claimed") << ", version "
            << r.value("turn", 0) << ", from "
            << (Str(r, "source_id").empty() ? Str(r, "source") : Str(r, "source_id"));
  if (r.contains("value_matches") && !r["value_matches"].get<bool>()) {
    std::cout << "  (the value in the history does not match the digest the rule read: "
              << Str(r, "digest") << ")";
  }
  std::cout << "\n";
  if (r.contains("call") && r["call"].is_object()) {
    const nlohmann::json& c = r["call"];
    std::cout << "        <- call " << Str(c, "id") << " " << Str(c, "tool") << " "
              << c["arguments"].dump() << " -> " << Str(c, "outcome") << " (turn "
              << c.value("turn", 0) << ")";
    if (r.contains("extraction") && r["extraction"].contains("path")) {
      std::cout << ", output " << r["extraction"]["path"].get<std::string>();
    }
    std::cout << "\n";
  } else if (r.contains("extraction") && r["extraction"].contains("pattern")) {
    std::cout << "        <- user message matching " << r["extraction"]["pattern"].dump() << "\n";
  }
  if (!Str(r, "rule").empty()) std::cout << "        extraction rule " << Str(r, "rule") << "\n";
}

void PrintDecision(const nlohmann::json& d, size_t k, size_t n) {
  std::cout << "decision " << k + 1 << " of " << n << ", committed in turn "
            << d.value("committed_in", 0) << ", on version " << d.value("version_seen", 0) << "+"
            << d.value("staged_seen", 0) << " staged: " << Str(d, "decision");
  const nlohmann::json& evidence = d["evidence"];
  if (Str(d, "decision") != "allow") {
    if (!Str(d, "rule").empty()) std::cout << " [" << Str(d, "rule") << "]";
  } else if (d.value("read_only", false)) {
    std::cout << " (a read-only tool: no rule runs)";
  } else {
    std::cout << (evidence.empty()
                      ? " (no rule applies to this tool)"
                      : " (all " + std::to_string(evidence.size()) + " applicable rules passed)");
  }
  if (!Str(d, "reason").empty()) std::cout << ": " << Str(d, "reason");
  std::cout << "\n  rules evaluated (" << evidence.size() << "):\n";
  for (const auto& e : evidence) {
    std::cout << (e["deciding"].get<bool>() ? "  * " : "    ") << Str(e, "rule") << ": "
              << Str(e, "outcome");
    if (!Str(e, "reason").empty()) std::cout << " (" << Str(e, "reason") << ")";
    std::cout << (e["deciding"].get<bool>() ? "  <- deciding" : "") << "\n";
  }
  // The deciding rule's chain first, then the others'.
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& e : evidence) {
      if (e["deciding"].get<bool>() != (pass == 0)) continue;
      std::cout << "  " << Str(e, "rule") << (pass == 0 ? " (deciding)" : "")
                << (e["reads"].empty() ? " read no ledger entries" : " read:") << "\n";
      for (const auto& r : e["reads"]) PrintRead(r);
    }
  }
}

}  // namespace

int ExplainCall(Store& store, const ConversationId& id, const std::string& call_id,
                const std::string& rules_dir, bool json) {
  std::shared_ptr<const RulePack> pack;
  if (!rules_dir.empty()) {
    auto loaded = RulePack::Load(rules_dir);
    if (!loaded) return ReportError("cannot load rule pack " + rules_dir, loaded.error());
    pack = std::move(*loaded);
  }
  auto h = LoadAuditHistory(store, id);
  if (!h) return ReportError("cannot read " + id.conversation, h.error());
  nlohmann::json decisions = nlohmann::json::array();
  for (const AuditTurn& t : h->turns) {
    for (const DecisionRecord& d : t.record.decisions) {
      if (d.call_id != call_id) continue;
      nlohmann::json row = EncodeDecision(d);
      row["committed_in"] = t.record.turn;
      row["evidence"] = DecisionEvidence(*h, d, pack.get());
      decisions.push_back(std::move(row));
    }
  }
  nlohmann::json calls = CallsOf(*h, call_id);
  if (decisions.empty() && calls.empty()) {
    return ReportError(id.conversation,
                       Status::NotFound("no decision or call for call id '" + call_id + "'"));
  }
  if (json) {
    PrintJson({{"conversation", id.conversation},
               {"call_id", call_id},
               {"decisions", decisions},
               {"calls", calls}});
    return kExitOk;
  }
  std::cout << "call " << call_id << " in " << id.conversation << "\n";
  for (size_t k = 0; k < decisions.size(); ++k) PrintDecision(decisions[k], k, decisions.size());
  if (decisions.empty())
    std::cout << "no policy decision was recorded for it (a read-only call?)\n";
  for (const auto& c : calls) {
    std::cout << "outcome: turn " << c.value("turn", 0) << "  " << Str(c, "tool") << " "
              << c["arguments"].dump() << " -> " << OutcomeMeaning(Str(c, "outcome")) << "\n";
  }
  if (calls.empty())
    std::cout << "outcome: no call recorded (not run, or its turn not committed)\n";
  return kExitOk;
}

}  // namespace taskledger::cli
