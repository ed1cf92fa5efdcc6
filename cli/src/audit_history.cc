// LoadAuditHistory / EncodeAuditDiff (see audit_history.h).
#include "audit_history.h"

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

}  // namespace taskledger::cli
