// Fuzz target: user-message extraction. Input: "<pending action JSON>\n<message>";
// a first line that is not JSON means no pending action.
// Runs the user patterns of the retail and subscription packs (POSIX regular
// expressions, the confirmation pattern binding the pending action).
// Properties: nothing throws or crashes; every update is a well-formed claim
// (verified=false, source "user") that applies to a ledger state; a
// confirmation carries exactly the message and the pending action.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_pack.h"
#include "fuzz_support.h"
#include "taskledger/extract/extractor.h"
#include "taskledger/ledger/state.h"

namespace taskledger::fuzz {
namespace {

std::vector<std::unique_ptr<Extractor>>& Extractors() {
  static auto* extractors = [] {
    auto* v = new std::vector<std::unique_ptr<Extractor>>;
    static ManualClock clock;
    for (const char* name : {"retail", "subscription"}) {
      auto pack = FixturePack(SourcePackFiles(name));
      auto rules = ExtractionRules::FromPack(*pack);
      if (!rules.has_value()) std::abort();
      v->push_back(std::make_unique<Extractor>(rules.value(), ExtractorOptions{.clock = &clock}));
    }
    return v;
  }();
  return *extractors;
}

void CheckClaims(const Extraction& ex, const nlohmann::json& pending) {
  LedgerState state;
  for (const Update& u : ex.updates) {
    TL_FUZZ_CHECK(!u.key.empty(), "an update with an empty key");
    TL_FUZZ_CHECK(
        u.provenance.source == SourceKind::kUserMessage,
        "user-message update with source " + std::string(SourceKindName(u.provenance.source)));
    TL_FUZZ_CHECK(!u.provenance.verified, "a user message produced verified evidence: " + u.key);
    if (u.op == UpdateOp::kSet && u.category == Category::kCondition && u.key == "confirmation") {
      TL_FUZZ_CHECK(u.value.is_object() && u.value.contains("action"),
                    "confirmation without action");
      TL_FUZZ_CHECK(u.value["action"] == pending, "confirmation bound to another action");
    }
    Status s = ApplyUpdate(state, u, 1, 0);
    TL_FUZZ_CHECK(s.ok(), "extracted update does not apply: " + s.ToString());
  }
}

}  // namespace
}  // namespace taskledger::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace taskledger::fuzz;
  auto [first, rest] = SplitFirstLine(AsView(data, size));
  nlohmann::json pending = nlohmann::json::parse(first, nullptr, false);
  std::string_view text = rest;
  if (pending.is_discarded()) {
    pending = nullptr;
    text = AsView(data, size);
  }
  // Owned, so NUL-terminated: the sanitizers' regexec interceptor reads the
  // subject up to a NUL even with REG_STARTEND (glibc itself does not).
  const std::string message(text);
  for (auto& extractor : Extractors())
    CheckClaims(extractor->ExtractUserMessage(message, pending), pending);
  return 0;
}
