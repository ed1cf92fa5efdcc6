// Fuzz target: rule-pack loading and running. Input: "<path>\n<contents>":
// one file of a pack (a *.lua rule file, extract.json, pack.json, a
// tests/*.json) added to a small valid pack, replacing the file of that path.
// The pack is loaded (hashing, JSON parsing, compiling the Lua in a throwaway
// sandbox); if it loads, a PolicyChecker is created under tight limits, it
// decides a write call and an unknown tool, runs the extractors, and the
// extraction rules compile and run over a fixed output.
// Properties: nothing throws or crashes; a rule that errors never lets a call
// through (fail closed); an unknown tool is denied unless the pack allows it.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_pack.h"
#include "fuzz_support.h"
#include "taskledger/extract/extractor.h"
#include "taskledger/ledger/state.h"
#include "taskledger/policy/checker.h"

namespace taskledger::fuzz {
namespace {

const std::vector<PackFile>& BaseFiles() {
  static const auto* files = new std::vector<PackFile>{
      {"pack.json",
       R"({"name": "fuzz", "tools": {"read_only": ["get_*"], "writes": ["cancel_*", "refund"]}})"},
      {"extract.json",
       R"({"tools": {"get_order": [{"id": "o.status", "path": "/status", "category": "fact",
           "key": "order.{/id}.status"}]},
           "user": [{"id": "confirm", "pattern": "^yes$", "confirmation": true}]})"},
      {"base.lua", R"lua(
rule {
  id = "base.pending_only",
  tools = {"cancel_*"},
  check = function(call, ledger)
    if ledger.fact("order." .. tostring(call.args.id) .. ".status") ~= "pending" then
      return deny("not pending")
    end
    return allow()
  end,
}
)lua"},
  };
  return *files;
}

LedgerState SampleState() {
  LedgerState s;
  s.version = 3;
  Entry e;
  e.value = "pending";
  e.provenance = {2, SourceKind::kToolOutput, "get_order#c0", true, "o.status", ""};
  s.of(Category::kFact)["order.#W1.status"] = e;
  e.value = nlohmann::json{{"text", "yes"}, {"action", nullptr}};
  e.provenance = {3, SourceKind::kUserMessage, "user", false, "confirm", ""};
  s.of(Category::kCondition)["confirmation"] = e;
  return s;
}

void RunPack(const std::shared_ptr<const RulePack>& pack) {
  CheckerLimits limits;
  limits.instruction_budget = 100'000;
  limits.deadline_ms = 200;
  limits.memory_limit_bytes = 8u << 20;
  auto checker = PolicyChecker::Create(pack, limits);
  if (!checker.has_value()) return;
  static const LedgerState state = SampleState();
  const ProposedCall calls[] = {
      {"c1", "cancel_order", {{"id", "#W1"}}},
      {"c2", "refund", {{"id", "#W1"}, {"amount", 10}}},
      {"c3", "fuzz_unknown_tool", nlohmann::json::object()},
      {"c4", "get_order", {{"id", "#W1"}}},
  };
  for (const ProposedCall& call : calls) {
    const PolicyDecision d = checker.value()->Check(call, state, ViewKey{"fuzz", 1}, 1'000);
    for (const RuleEvaluation& r : d.rules) {
      TL_FUZZ_CHECK(!r.error || d.outcome == Outcome::kDeny,
                    "rule " + r.rule_id.str() + " errored but the call was not denied");
    }
    if (pack->Classify(call.tool) == ToolClass::kUnknown && !pack->allow_unknown_tools()) {
      TL_FUZZ_CHECK(d.outcome == Outcome::kDeny, "an unknown tool was let through");
    }
    if (pack->Classify(call.tool) == ToolClass::kReadOnly) {
      TL_FUZZ_CHECK(d.outcome == Outcome::kAllow && d.rules.empty(), "a read-only tool was gated");
    }
  }
  const nlohmann::json output = {
      {"id", "#W1"}, {"status", "pending"}, {"items", {1, "two", nullptr}}};
  (void)checker.value()->RunExtractors(calls[3], output, 1'000);

  auto rules = ExtractionRules::FromPack(*pack);
  if (!rules.has_value()) return;
  ManualClock clock;
  Extractor extractor(rules.value(),
                      ExtractorOptions{.clock = &clock, .checker = checker.value().get()});
  (void)extractor.ExtractToolOutput(calls[3], output.dump());
  (void)extractor.ExtractUserMessage("yes", nlohmann::json{{"tool", "refund"}});
}

}  // namespace
}  // namespace taskledger::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace taskledger;
  using namespace taskledger::fuzz;
  auto [path, contents] = SplitFirstLine(AsView(data, size));
  std::vector<PackFile> files;
  for (const PackFile& f : BaseFiles()) {
    if (f.path != path) files.push_back(f);
  }
  files.push_back({std::string(path), std::string(contents)});
  auto pack = RulePack::FromFiles(std::move(files));
  if (pack.has_value()) RunPack(pack.value());
  return 0;
}
