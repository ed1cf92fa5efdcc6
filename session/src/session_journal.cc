// Session's journal (SessionCommandOptions::journal): the loop's
// non-deterministic values recorded on first execution and returned from the
// record when a resumed loop asks for them again (see session.h).
#include <string>

#include "internal/session_commands.h"
#include "taskledger/session/session.h"

namespace taskledger {
namespace {

Status NoJournal() {
  return Status::FailedPrecondition(
      "this session keeps no journal: open it with SessionOptions::commands.store and "
      "commands.journal = true");
}

}  // namespace

const Journal* Session::journal() const {
  return commands_ && commands_->journal ? &*commands_->journal : nullptr;
}

Result<nlohmann::json> Session::Journaled(const std::string& kind, const nlohmann::json& request,
                                          const std::function<Result<nlohmann::json>()>& produce) {
  if (!commands_ || !commands_->journal) return NoJournal();
  if (Status settled = Commands::Settle(*this); !settled.ok()) return settled;
  return commands_->journal->Step(kind, request, produce);
}

Result<int64_t> Session::JournaledNowMs() {
  if (!commands_ || !commands_->journal) return NoJournal();
  if (Status settled = Commands::Settle(*this); !settled.ok()) return settled;
  return commands_->journal->NowMs(*clock_);
}

Result<uint64_t> Session::JournaledRandom(const std::function<uint64_t()>& rng) {
  if (!commands_ || !commands_->journal) return NoJournal();
  if (Status settled = Commands::Settle(*this); !settled.ok()) return settled;
  return commands_->journal->Random(rng);
}

}  // namespace taskledger
