// Journal: record on first execution, return the record on replay, and stop
// with a Divergence error when a replayed request differs from the recorded one.
#include <string>
#include <utility>

#include "taskledger/commands/journal.h"

namespace taskledger {
namespace {

std::string Abbreviate(const nlohmann::json& j) {
  std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 300) {
    text.resize(300);
    text.append("...");
  }
  return text;
}

}  // namespace

Journal::Journal(CommandStore& store, RunId run) : store_(store), run_(std::move(run)) {}

Result<nlohmann::json> Journal::Step(const std::string& kind, const nlohmann::json& request,
                                     const std::function<Result<nlohmann::json>()>& produce) {
  if (diverged_) return *diverged_;
  auto canonical = CanonicalJson(request);
  if (!canonical) return canonical.error();
  JournalEntry mine;
  mine.position = position_ + 1;
  mine.kind = kind;
  mine.request_hash = Sha256Hex(kind + "\n" + *canonical);
  mine.request = request;

  auto recorded = store_.GetJournalEntry(run_, mine.position);
  if (!recorded) return recorded.error();
  bool from_record = recorded->has_value();
  JournalEntry stored;
  if (from_record) {
    stored = **recorded;
  } else {
    Result<nlohmann::json> produced = Status::Internal("journal producer did not run");
    try {
      produced = produce();
    } catch (const std::exception& e) {
      produced = Status::Internal(kind + " step threw: " + e.what());
    }
    if (!produced) return produced.error();
    mine.value = std::move(produced).value();
    // Put-if-absent: if another incarnation recorded this position meanwhile,
    // its value wins and is compared below like any replayed record.
    auto put = store_.PutJournalEntry(run_, mine);
    if (!put) return put.error();
    stored = std::move(put).value();
    from_record = stored.request_hash != mine.request_hash || stored.value != mine.value;
  }
  if (stored.kind != mine.kind || stored.request_hash != mine.request_hash) {
    diverged_ = Status::Divergence("journal of run " + run_.tenant + "/" + run_.run +
                                   " diverged at position " + std::to_string(mine.position) +
                                   ": expected " + stored.kind + " " + Abbreviate(stored.request) +
                                   ", got " + mine.kind + " " + Abbreviate(mine.request));
    return *diverged_;
  }
  ++position_;
  if (from_record) ++replayed_;
  return stored.value;
}

Result<nlohmann::json> Journal::Completion(const nlohmann::json& request,
                                           const std::function<Result<nlohmann::json>()>& model) {
  return Step("llm", request, model);
}

Result<nlohmann::json> Journal::ToolResult(const std::string& tool, const nlohmann::json& arguments,
                                           const std::function<Result<nlohmann::json>()>& call) {
  return Step("tool", {{"tool", tool}, {"arguments", arguments}}, call);
}

Result<int64_t> Journal::NowMs(const Clock& clock) {
  auto v = Step("clock", nlohmann::json::object(),
                [&]() -> Result<nlohmann::json> { return nlohmann::json(clock.NowMs()); });
  if (!v) return v.error();
  if (!v->is_number_integer()) return Status::Corruption("journal clock entry is not an integer");
  return v->get<int64_t>();
}

Result<uint64_t> Journal::Random(const std::function<uint64_t()>& rng) {
  auto v = Step("random", nlohmann::json::object(),
                [&]() -> Result<nlohmann::json> { return nlohmann::json(rng()); });
  if (!v) return v.error();
  if (!v->is_number_unsigned() && !v->is_number_integer()) {
    return Status::Corruption("journal random entry is not an integer");
  }
  return v->get<uint64_t>();
}

}  // namespace taskledger
