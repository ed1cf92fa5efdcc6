// Session, the provenance side: what the conversation's provenance index is
// given (each user message and tool output, staged with the turn as a
// SourceRecord so it outlives the session), how a session opened on a
// conversation with history gets the same index back (IndexCommittedSources,
// from the turns' persisted sources, or AdoptProvenance, from the index an
// earlier session on the same head handed on with TakeProvenance), and the
// index refusals staged as extraction errors. Design: docs/design.md,
// "Provenance across sessions". Not thread-safe, like Session.
#include <utility>

#include "taskledger/session/session.h"

namespace taskledger {

void Session::NoteProvenance(const Status& indexed, std::string_view what) {
  if (indexed.ok()) return;
  // The index now refuses every lookup, so rules asking provenance deny:
  // the error says why.
  ledger_->StageError(ExtractionError{.source = "provenance",
                                      .tool = std::nullopt,
                                      .call_id = std::nullopt,
                                      .rule = std::nullopt,
                                      .code = "provenance_limit",
                                      .message = std::string(what) + ": " + indexed.message()});
}

void Session::IndexUserMessage(std::string_view text) {
  // An incomplete index keeps nothing more: neither does the record. Not
  // health(): that walks the queue, and every Add would be eager.
  if (provenance_->incomplete()) return;
  const uint64_t turn = ledger_->turn();
  SourceRecord source;
  source.kind = SourceRecord::Kind::kUserMessage;
  source.turn = turn;
  Status indexed = provenance_->AddUserMessage(static_cast<int64_t>(turn), text);
  if (indexed.ok()) {
    source.content = CborValue::Encode(nlohmann::json(text));
  } else {
    source.refused = indexed.message();  // the text itself is over a limit
  }
  ledger_->StageSource(std::move(source));
  NoteProvenance(indexed, "user message");
}

void Session::IndexToolOutput(const ProposedCall& call, const nlohmann::json& output) {
  if (provenance_->incomplete()) return;
  const uint64_t turn = ledger_->turn();
  SourceRecord source;
  source.kind = SourceRecord::Kind::kToolOutput;
  source.turn = turn;
  source.tool = call.tool;
  source.call_id = call.id;
  Status indexed =
      provenance_->AddToolOutput(static_cast<int64_t>(turn), call.tool, call.id, output);
  if (indexed.ok()) {
    source.content = CborValue::Encode(output);  // one encode; no parsed copy kept
  } else {
    source.refused = indexed.message();
  }
  ledger_->StageSource(std::move(source));
  NoteProvenance(indexed, call.tool + "(" + call.id + ")");
}

Status Session::IndexCommittedSources(uint64_t first, uint64_t last) {
  auto turns = store_.ReadTurns(ledger_->id(), first, last);
  if (!turns) return turns.error();
  provenance::ProvenanceIndex& index = *provenance_;
  for (const TurnRecord& t : *turns) {
    for (const SourceRecord& s : t.sources) {
      // The refusals were staged as errors when they happened; the index
      // keeps its own health, so the statuses are not looked at here.
      const auto turn = static_cast<int64_t>(s.turn);
      if (!s.refused.empty()) {
        index.MarkIncomplete(Status::LimitExceeded(s.refused));
      } else if (s.kind == SourceRecord::Kind::kUserMessage) {
        const nlohmann::json text = s.content.Decode();
        if (!text.is_string()) {
          index.MarkIncomplete(Status::Corruption("turn " + std::to_string(t.turn) +
                                                  ": a user message source that is not text"));
          continue;
        }
        (void)index.AddUserMessage(turn, text.get_ref<const std::string&>());
      } else {
        (void)index.AddToolOutput(turn, s.tool, s.call_id, s.content.Decode());
      }
    }
  }
  return Status::Ok();
}

Result<bool> Session::AdoptProvenance(ProvenanceCarry& carry) {
  if (!carry.index || carry.id != ledger_->id() || carry.pack_version != pack_->version()) {
    return false;
  }
  // The carried head, or one that extends it: a peer's turns since were
  // caught up on (their versions up to the carried one are the carried ones).
  const uint64_t carried = carry.head.version;
  const bool extends = ledger_->opened_from_known() && carried < ledger_->version();
  if (!extends && !(carry.head == ledger_->head())) return false;
  provenance_ = std::move(carry.index);
  if (extends) {
    if (Status indexed = IndexCommittedSources(carried + 1, ledger_->version()); !indexed.ok()) {
      return indexed;
    }
  }
  return true;
}

std::shared_ptr<ProvenanceCarry> Session::TakeProvenance() {
  if (!provenance_exact_ || ledger_->has_pending()) return nullptr;
  auto carry = std::make_shared<ProvenanceCarry>();
  carry->id = ledger_->id();
  carry->pack_version = pack_->version();
  HeadRead known = ledger_->known_head();
  carry->head = std::move(known.state);
  carry->head_turn = std::move(known.turn);
  carry->head_incarnation = std::move(known.incarnation);
  carry->index = std::move(provenance_);
  provenance_ = std::make_unique<provenance::ProvenanceIndex>(pack_->trust());
  provenance_->MarkIncomplete(Status::FailedPrecondition(
      "this session handed its provenance index on (Session::TakeProvenance)"));
  return carry;
}

}  // namespace taskledger
