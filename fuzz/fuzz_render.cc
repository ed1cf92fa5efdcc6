// Fuzz target: the state-block renderer. The input is decoded (with
// FuzzedDataProvider) into a ledger state whose keys, values and provenance
// are arbitrary bytes (invalid UTF-8, newlines, quotes, '<', '`', '#'), plus
// render options; every format is rendered.
// Properties (state_block.h): nothing throws or crashes; untrusted text adds
// no structure: plain and Markdown have exactly one line per heading,
// omission note and kept entry; XML has exactly the tags the entries need;
// JSON parses and has exactly the kept entries as members; the character
// count is right and within the budget.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "taskledger/ledger/state.h"
#include "taskledger/render/state_block.h"

namespace taskledger::fuzz {
namespace {

constexpr std::string_view kPlural[kCategoryCount] = {"facts", "identifiers", "constraints",
                                                      "conditions"};

nlohmann::json FuzzValue(FuzzedDataProvider& in, int depth) {
  switch (in.ConsumeIntegralInRange<int>(0, depth > 3 ? 4 : 6)) {
    case 0:
      return nullptr;
    case 1:
      return in.ConsumeBool();
    case 2:
      return in.ConsumeIntegral<int64_t>();
    case 3:
      return in.ConsumeFloatingPoint<double>();
    case 4:
      return in.ConsumeRandomLengthString(64);  // any bytes, UTF-8 or not
    case 5: {
      nlohmann::json a = nlohmann::json::array();
      for (int n = in.ConsumeIntegralInRange(0, 3); n > 0; --n)
        a.push_back(FuzzValue(in, depth + 1));
      return a;
    }
    default: {
      nlohmann::json o = nlohmann::json::object();
      for (int n = in.ConsumeIntegralInRange(0, 3); n > 0; --n) {
        o[in.ConsumeRandomLengthString(16)] = FuzzValue(in, depth + 1);
      }
      return o;
    }
  }
}

LedgerState FuzzState(FuzzedDataProvider& in) {
  LedgerState state;
  state.version = in.ConsumeIntegralInRange<uint64_t>(0, 100);
  for (int n = in.ConsumeIntegralInRange(0, 24); n > 0 && in.remaining_bytes() > 0; --n) {
    const int category = in.ConsumeIntegralInRange(0, kCategoryCount - 1);
    std::string key = in.ConsumeRandomLengthString(32);
    Entry e;
    e.value = FuzzValue(in, 0);
    e.provenance.turn = in.ConsumeIntegralInRange<uint64_t>(0, 100);
    e.provenance.source = static_cast<SourceKind>(in.ConsumeIntegralInRange(0, 3));
    e.provenance.source_id = in.ConsumeRandomLengthString(24);
    e.provenance.verified = in.ConsumeBool();
    e.provenance.rule_id = in.ConsumeRandomLengthString(16);
    if (in.ConsumeBool()) e.expires_at_turn = in.ConsumeIntegralInRange<uint64_t>(0, 120);
    if (in.ConsumeBool()) e.expires_at_ms = in.ConsumeIntegralInRange<int64_t>(0, 2000);
    state.entries[category][std::move(key)] = std::move(e);
  }
  return state;
}

size_t Count(std::string_view text, std::string_view needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

size_t Utf8Chars(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

void CheckBlock(const LedgerState& state, int64_t now_ms, const StateBlockOptions& options) {
  auto block = RenderStateBlock(state, now_ms, options);
  if (!block.has_value()) {
    TL_FUZZ_CHECK(block.error().code() == StatusCode::kLimitExceeded && options.max_chars > 0,
                  "render failed: " + block.error().ToString());
    return;
  }
  const StateBlock& b = block.value();
  const std::string& text = b.text;
  TL_FUZZ_CHECK(b.chars == Utf8Chars(text), "chars does not count the text");
  TL_FUZZ_CHECK(options.max_chars == 0 || b.chars <= options.max_chars, "block over budget");
  TL_FUZZ_CHECK(b.approx_tokens == ApproxTokens(b.chars), "approx_tokens");

  size_t live[kCategoryCount] = {};
  size_t kept = 0, sections = 0, notes = 0;
  for (int c = 0; c < kCategoryCount; ++c) {
    for (const auto& [key, entry] : state.entries[c])
      live[c] += entry.LiveAt(state.version, now_ms);
    TL_FUZZ_CHECK(b.omitted[c] <= live[c], "more omitted than live");
    kept += live[c] - b.omitted[c];
    sections += live[c] > 0;
    notes += b.omitted[c] > 0;
  }
  const size_t lines = Count(text, "\n") + 1;
  switch (options.format) {
    case StateBlockFormat::kPlain:
    case StateBlockFormat::kMarkdown: {
      const size_t expected = 1 + sections + notes + kept + (sections == 0 ? 1 : 0);
      TL_FUZZ_CHECK(lines == expected, "line count " + std::to_string(lines) +
                                           " != " + std::to_string(expected) + "\n" + text);
      TL_FUZZ_CHECK(Count(text, "\n- ") == kept, "list items != kept entries\n" + text);
      if (options.format == StateBlockFormat::kMarkdown) {
        TL_FUZZ_CHECK(Count(text, "\n#") == sections, "headings != sections\n" + text);
      }
      break;
    }
    case StateBlockFormat::kXml: {
      TL_FUZZ_CHECK(lines == 2 + 2 * sections + kept, "XML line count\n" + text);
      TL_FUZZ_CHECK(Count(text, "<") == 2 + 2 * sections + 2 * kept, "XML tag count\n" + text);
      TL_FUZZ_CHECK(Count(text, "<entry ") == kept, "XML entries != kept\n" + text);
      break;
    }
    case StateBlockFormat::kJson: {
      const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
      TL_FUZZ_CHECK(!j.is_discarded(), "JSON block does not parse\n" + text);
      TL_FUZZ_CHECK(j.is_object() && j.size() == 1 && j.contains("task_state"),
                    "JSON shape\n" + text);
      const nlohmann::json& ts = j["task_state"];
      TL_FUZZ_CHECK(ts["version"] == state.version, "JSON version");
      size_t members = 0;
      for (int c = 0; c < kCategoryCount; ++c) {
        const std::string name(kPlural[c]);
        if (!ts.contains(name)) continue;
        TL_FUZZ_CHECK(ts[name].is_object(), "JSON section is not an object");
        // Keys that differ only in invalid bytes may render alike; never more.
        TL_FUZZ_CHECK(ts[name].size() <= live[c] - b.omitted[c],
                      "JSON section has extra members\n" + text);
        members += ts[name].size();
      }
      TL_FUZZ_CHECK(ts.size() == 1 + sections + (notes > 0 ? 1 : 0),
                    "JSON has extra members\n" + text);
      TL_FUZZ_CHECK(members <= kept, "JSON members");
      break;
    }
  }
}

}  // namespace
}  // namespace taskledger::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace taskledger;
  using namespace taskledger::fuzz;
  FuzzedDataProvider in(data, size);
  StateBlockOptions options;
  options.include_provenance = in.ConsumeBool();
  options.max_chars = in.ConsumeBool() ? in.ConsumeIntegralInRange<size_t>(0, 2000) : 0;
  const int64_t now_ms = in.ConsumeIntegralInRange<int64_t>(0, 2000);
  const LedgerState state = FuzzState(in);
  for (StateBlockFormat f : {StateBlockFormat::kPlain, StateBlockFormat::kMarkdown,
                             StateBlockFormat::kXml, StateBlockFormat::kJson}) {
    options.format = f;
    CheckBlock(state, now_ms, options);
  }
  return 0;
}
