// LoadAuditHistory, EncodeAuditDiff and the evidence chain of a decision
// (see audit_history.h).
#include "audit_history.h"

#include <algorithm>
#include <map>

#include "taskledger/base/digest.h"
#include "taskledger/ledger/codec.h"

namespace taskledger::cli {

Result<AuditHistory> LoadAuditHistory(Store& store, const ConversationId& id) {
  auto head = store.Head(id);
  if (!head) return head.error();
  if (*head == 0) return Status::NotFound("conversation " + id.conversation + " has no turns");
  auto turns = store.ReadTurns(id, 1, *head);
  if (!turns) return turns.error();
  AuditHistory h;
  h.id = id;
  h.states.emplace_back();
  for (TurnRecord& t : *turns) {
    LedgerState next = h.states.back();
    Status applied = ApplyTurn(next, t);
    if (!applied.ok()) {
      return Status::Corruption("turn " + std::to_string(t.turn) +
                                " does not apply: " + applied.ToString());
    }
    AuditTurn at;
    at.diff = Diff(h.states.back(), next, t.committed_at_ms);
    at.record = std::move(t);
    h.turns.push_back(std::move(at));
    h.states.push_back(std::move(next));
  }
  return h;
}

nlohmann::json EncodeAuditDiff(const StateDiff& diff) {
  nlohmann::json out = nlohmann::json::array();
  auto add = [&out](const char* change, const std::vector<EntryChange>& changes) {
    for (const EntryChange& c : changes) {
      nlohmann::json j = {
          {"change", change}, {"category", CategoryName(c.category)}, {"key", c.key}};
      if (c.before) j["before"] = c.before->value;
      if (c.after) {
        j["after"] = c.after->value;
        j["source"] = c.after->provenance.source_id.empty()
                          ? std::string(SourceKindName(c.after->provenance.source))
                          : c.after->provenance.source_id;
        j["verified"] = c.after->provenance.verified;
        if (!c.after->provenance.rule_id.empty()) j["rule"] = c.after->provenance.rule_id;
      }
      out.push_back(std::move(j));
    }
  };
  add("added", diff.added);
  add("changed", diff.changed);
  add("removed", diff.removed);
  return out;
}

LedgerState SeenState(const AuditHistory& h, const DecisionRecord& d) {
  if (d.version_seen >= h.states.size()) return h.states.back();
  LedgerState s = h.states[d.version_seen];
  if (d.turn != d.version_seen + 1 || d.turn > h.turns.size()) return s;
  const TurnRecord& t = h.turns[d.turn - 1].record;
  const size_t n = std::min<size_t>(d.staged_seen, t.updates.size());
  for (size_t i = 0; i < n; ++i) {
    // Each update applied when it was staged; one that failed then fails here too.
    (void)ApplyUpdate(s, t.updates[i], d.turn, t.committed_at_ms);
  }
  return s;
}

nlohmann::json CallsOf(const AuditHistory& h, const std::string& call_id) {
  nlohmann::json calls = nlohmann::json::array();
  for (const AuditTurn& t : h.turns) {
    for (const CallRecord& c : t.record.calls) {
      if (c.call.id != call_id) continue;
      calls.push_back({{"turn", t.record.turn},
                       {"tool", c.call.tool},
                       {"arguments", c.call.arguments},
                       {"writes", c.writes},
                       {"outcome", c.outcome}});
    }
  }
  return calls;
}

namespace {

// extract.json's rules by id: {"tool", "path"} for tool outputs, {"pattern"}
// for user messages.
std::map<std::string, nlohmann::json> ExtractionRules(const RulePack* pack) {
  std::map<std::string, nlohmann::json> out;
  const nlohmann::json* spec = pack != nullptr ? pack->extract_spec() : nullptr;
  if (spec == nullptr || !spec->is_object()) return out;
  auto tools = spec->find("tools");
  if (tools != spec->end() && tools->is_object()) {
    for (const auto& [tool, rules] : tools->items()) {
      if (!rules.is_array()) continue;
      for (const auto& r : rules) {
        if (!r.is_object() || !r.contains("id") || !r["id"].is_string()) continue;
        nlohmann::json x = {{"rule", r["id"]}, {"tool", tool}};
        if (r.contains("path")) x["path"] = r["path"];
        out[r["id"].get<std::string>()] = std::move(x);
      }
    }
  }
  auto user = spec->find("user");
  if (user != spec->end() && user->is_array()) {
    for (const auto& r : *user) {
      if (!r.is_object() || !r.contains("id") || !r["id"].is_string()) continue;
      nlohmann::json x = {{"rule", r["id"]}};
      if (r.contains("pattern")) x["pattern"] = r["pattern"];
      out[r["id"].get<std::string>()] = std::move(x);
    }
  }
  return out;
}

// The recorded call a source id ("get_order#c0") names, or null.
nlohmann::json CallNamed(const AuditHistory& h, const std::string& source_id, uint64_t turn) {
  const size_t hash = source_id.rfind('#');
  if (hash == std::string::npos) return nullptr;
  const std::string tool = source_id.substr(0, hash);
  const std::string id = source_id.substr(hash + 1);
  nlohmann::json found = nullptr;
  for (const AuditTurn& t : h.turns) {
    for (const CallRecord& c : t.record.calls) {
      if (c.call.tool != tool || c.call.id != id) continue;
      found = {{"turn", t.record.turn},
               {"tool", c.call.tool},
               {"id", c.call.id},
               {"arguments", c.call.arguments},
               {"outcome", c.outcome}};
      if (t.record.turn == turn) return found;  // the call whose output wrote the entry
    }
  }
  return found;
}

}  // namespace

nlohmann::json DecisionEvidence(const AuditHistory& h, const DecisionRecord& d,
                                const RulePack* pack) {
  const LedgerState seen = SeenState(h, d);
  const std::map<std::string, nlohmann::json> extraction = ExtractionRules(pack);
  const nlohmann::json encoded = EncodeDecision(d);
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < d.rules.size(); ++i) {
    const RuleResult& r = d.rules[i];
    nlohmann::json reads = nlohmann::json::array();
    for (size_t k = 0; k < r.reads.size(); ++k) {
      const EntryRead& read = r.reads[k];
      nlohmann::json x = encoded["rules"][i]["reads"][k];
      const Entry* e = seen.of(read.category).get(read.key);
      if (read.present && e != nullptr) {
        x["value"] = e->value;
        x["value_matches"] = ArgsHash(e->value).substr(0, 16) == read.digest;
      }
      if (read.present && read.source == SourceKind::kToolOutput) {
        x["call"] = CallNamed(h, read.source_id, read.turn);
      }
      if (auto it = extraction.find(read.rule); it != extraction.end()) {
        x["extraction"] = it->second;
      }
      reads.push_back(std::move(x));
    }
    out.push_back({{"rule", r.id},
                   {"outcome", r.outcome},
                   {"reason", r.reason},
                   {"deciding", d.decision != "allow" && !d.rule.empty() && r.id == d.rule},
                   {"reads", std::move(reads)}});
  }
  return out;
}

std::string OutcomeMeaning(const std::string& outcome) {
  static const std::map<std::string, std::string> meanings = {
      {"ok", "ok"},
      {"error", "error (the tool ran and reported a failure)"},
      {"denied", "denied (not run)"},
      {"uncertain", "uncertain (the effect may have happened: reconcile it)"},
      {"deduplicated", "deduplicated (already done in this run; not run again)"},
      {"awaiting_approval", "awaiting approval (recorded; runs once an operator approves)"},
      {"escalated", "escalated (an earlier attempt's outcome is unknown; an operator decides)"},
      {"cancelled", "cancelled (not run)"},
      {"in_progress", "in progress (another worker holds it)"},
  };
  auto it = meanings.find(outcome);
  return it == meanings.end() ? outcome : it->second;
}

}  // namespace taskledger::cli
