// Fuzz target: tool-output extraction. Input: "<tool name>\n<raw output>".
// Runs the retail pack's extract.json mappings and text rules plus a Lua
// extractor that walks whatever JSON it is given (so the JSON-to-Lua bridge
// and the validation of Lua-made updates are exercised too), over the raw
// bytes and, when they parse, over the decoded document.
// Properties: nothing throws or crashes; every update is a well-formed,
// verified tool-output update attributed to this call; the updates apply to a
// ledger state, and that state survives the codec (encode, CBOR, decode)
// unchanged.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_pack.h"
#include "fuzz_support.h"
#include "taskledger/extract/extractor.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/ledger/extraction_error.h"
#include "taskledger/ledger/state.h"
#include "taskledger/policy/checker.h"

namespace taskledger::fuzz {
namespace {

// Walks any decoded output (bounded depth and count) and emits one update per
// scalar: keys from member names, values as found.
constexpr const char* kWalkExtractor = R"lua(
extractor {
  id = "fuzz.walk",
  tools = {"*"},
  extract = function(output, call)
    local out = {}
    local function walk(v, path, depth)
      if depth > 6 or #out >= 16 then return end
      if type(v) == "table" then
        for k, x in pairs(v) do walk(x, path .. "." .. tostring(k), depth + 1) end
      else
        out[#out + 1] = {category = "fact", key = "walk" .. path, value = v}
      end
    end
    walk(output, "", 0)
    return out
  end,
}
)lua";

struct Fixture {
  std::shared_ptr<const RulePack> pack;
  std::unique_ptr<PolicyChecker> checker;
  std::unique_ptr<Extractor> extractor;
  ManualClock clock;
};

Fixture& GetFixture() {
  static Fixture* fixture = [] {
    auto* f = new Fixture;
    auto files = SourcePackFiles("retail");
    files.push_back({"fuzz_walk.lua", kWalkExtractor});
    f->pack = FixturePack(std::move(files));
    CheckerLimits limits;
    limits.instruction_budget = 200'000;
    limits.deadline_ms = 1000;
    limits.memory_limit_bytes = 16u << 20;
    auto checker = PolicyChecker::Create(f->pack, limits);
    auto rules = ExtractionRules::FromPack(*f->pack);
    if (!checker.has_value() || !rules.has_value()) std::abort();
    f->checker = std::move(checker.value());
    f->extractor = std::make_unique<Extractor>(
        rules.value(), ExtractorOptions{.clock = &f->clock, .checker = f->checker.get()});
    return f;
  }();
  return *fixture;
}

void CheckExtraction(const ProposedCall& call, const Extraction& ex, const Fixture& f) {
  LedgerState state;
  for (const Update& u : ex.updates) {
    TL_FUZZ_CHECK(!u.key.empty(), "an update with an empty key");
    TL_FUZZ_CHECK(
        u.provenance.source == SourceKind::kToolOutput,
        "tool-output update with source " + std::string(SourceKindName(u.provenance.source)));
    TL_FUZZ_CHECK(u.provenance.verified, "tool-output update not verified: " + u.key);
    TL_FUZZ_CHECK(u.provenance.source_id == call.tool + "#" + call.id,
                  "source_id " + u.provenance.source_id.str());
    TL_FUZZ_CHECK(u.provenance.pack_version == f.pack->version(), "pack_version mismatch");
    Status s = ApplyUpdate(state, u, 1, f.clock.NowMs());
    TL_FUZZ_CHECK(s.ok(), "extracted update does not apply: " + s.ToString());
  }
  for (const ExtractionError& e : ex.errors) {
    const nlohmann::json stored = EncodeExtractionError(e);
    TL_FUZZ_CHECK(e.code.has_value() && e.extra.is_object() && e.extra.empty(),
                  "extraction error without a code, or with members it does not type: " +
                      stored.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace));
    TL_FUZZ_CHECK(DecodeExtractionError(stored) == e, "extraction error does not read back");
  }
  state.version = 1;
  const nlohmann::json encoded = EncodeState(state);
  const std::vector<uint8_t> cbor = nlohmann::json::to_cbor(encoded);
  const nlohmann::json back = nlohmann::json::from_cbor(cbor, true, false);
  TL_FUZZ_CHECK(!back.is_discarded(), "encoded state is not valid CBOR");
  auto decoded = DecodeState(back);
  TL_FUZZ_CHECK(decoded.has_value(), "state does not decode: " + decoded.status().ToString());
  TL_FUZZ_CHECK(decoded.value() == state, "state changed through the codec");
}

}  // namespace
}  // namespace taskledger::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace taskledger;
  using namespace taskledger::fuzz;
  Fixture& f = GetFixture();
  auto [tool, raw_output] = SplitFirstLine(AsView(data, size));
  // Owned, so NUL-terminated: the sanitizers' regexec interceptor reads the
  // subject up to a NUL even with REG_STARTEND (glibc itself does not), and
  // libFuzzer's buffer has none. Callers' strings always do.
  const std::string output(raw_output);
  ProposedCall call{"c1", std::string(tool), {{"user_id", "u_1"}, {"order_id", "#W1"}}};

  CheckExtraction(call, f.extractor->ExtractToolOutput(call, output), f);
  const nlohmann::json doc = nlohmann::json::parse(output, nullptr, false);
  if (!doc.is_discarded()) {
    CheckExtraction(call, f.extractor->ExtractParsedToolOutput(call, doc), f);
  }
  return 0;
}
