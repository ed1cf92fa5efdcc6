// `taskledger policy coverage DIR [--trace FILE]... [--no-tests]`: which rules
// of a pack its tests (tests/*.json) and the given traces exercised. Per rule
// and per source: checks it ran on (evaluated), what it said (allowed, denied,
// other: require_approval or confirm), calls it decided (the deciding rule of
// a non-allow decision) and evaluations that failed (errors). Rules that never
// ran are listed, and so are rules that ran but never decided anything (their
// deny path is untested). Traces are replayed on a memory store, as `replay`
// does. Exit 0: every rule ran at least once; 1: some rule never ran; 2: the
// pack, a test case or a trace line could not be read.
#include <iomanip>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cli_common.h"
#include "policy_cases.h"
#include "policy_coverage.h"
#include "replay_input.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/checker.h"
#include "taskledger/session/replay.h"
#include "taskledger/session/session.h"

namespace taskledger::cli {
namespace {

struct CoverageOptions {
  CommonOptions common;
  std::string dir;
  std::vector<std::string> traces;
  bool no_tests = false;
};

struct Counts {
  uint64_t evaluated = 0, allowed = 0, denied = 0, other = 0, decided = 0, errors = 0;
  nlohmann::json ToJson() const {
    return {{"evaluated", evaluated}, {"allowed", allowed}, {"denied", denied},
            {"other", other},         {"decided", decided}, {"errors", errors}};
  }
};

// rule id -> counts, for one source ("tests" or "traces").
using Tally = std::map<std::string, Counts>;

void Count(Tally& t, const std::string& rule, Outcome outcome, bool error, bool deciding) {
  Counts& c = t[rule];
  ++c.evaluated;
  if (outcome == Outcome::kAllow) {
    ++c.allowed;
  } else if (outcome == Outcome::kDeny) {
    ++c.denied;
  } else {
    ++c.other;
  }
  if (error) ++c.errors;
  if (deciding) ++c.decided;
}

// Counts the pack's test cases into `t`; false (after saying why) if a file or
// case is malformed.
bool CountTests(const std::shared_ptr<const RulePack>& pack, Tally& t, uint64_t& cases) {
  bool ok = true;
  for (const auto& [path, file] : pack->tests()) {
    auto list = file.find("cases");
    if (list == file.end() || !list->is_array()) {
      std::cerr << path << ": \"cases\" must be an array\n";
      ok = false;
      continue;
    }
    for (const nlohmann::json& c : *list) {
      const std::string name = c.is_object() ? c.value("name", std::string("case")) : "case";
      auto call = c.is_object() && c.contains("call")
                      ? ParsePolicyCall(c["call"])
                      : Result<ProposedCall>(Status::InvalidArgument("a case needs \"call\""));
      auto d = call ? DecidePolicyCase(pack, c, *call) : Result<PolicyDecision>(call.error());
      if (!d) {
        std::cerr << path << ": " << name << ": " << d.error().ToString() << "\n";
        ok = false;
        continue;
      }
      ++cases;
      for (const RuleEvaluation& r : d->rules) {
        const bool deciding = d->outcome != Outcome::kAllow && r.rule_id.str() == d->rule_id;
        Count(t, r.rule_id.str(), r.outcome, r.error, deciding);
      }
    }
  }
  return ok;
}

// Replays the traces into `t`; false (after saying why) on an unreadable file
// or line.
bool CountTraces(const std::shared_ptr<const RulePack>& pack, const std::vector<std::string>& paths,
                 Tally& t, uint64_t& calls) {
  auto checker = PolicyChecker::Create(pack);
  if (!checker) {
    ReportError("cannot load the pack's Lua", checker.error());
    return false;
  }
  auto rules = CompileExtractionRules(*pack);
  if (!rules) {
    ReportError("cannot compile extract.json", rules.error());
    return false;
  }
  SessionOptions options;
  options.checker = checker->get();
  options.extraction_rules = *rules;
  options.call_result_texts = false;  // coverage reads the decisions, not the texts
  auto store = NewMemoryStore();
  bool ok = true;
  uint64_t n = 0;
  ReplayInput input(paths);
  while (auto line = input.Next()) {
    const std::string& where = line->where;
    if (!line->conversation) {
      std::cerr << where << ": " << line->conversation.error().ToString() << "\n";
      ok = false;
      continue;
    }
    // Each line is its own conversation, whatever ids the traces reuse.
    ConversationId id{"coverage", std::to_string(++n)};
    auto session = Session::Open(*store, id, pack, options);
    auto replay = session ? ReplayConversation(**session, std::move(*line->conversation))
                          : Result<ConversationReplay>(session.error());
    if (!replay) {
      std::cerr << where << ": " << replay.error().ToString() << "\n";
      ok = false;
      continue;
    }
    for (const ReplayedCall& c : replay->calls) {
      if (c.read_only) continue;
      ++calls;
      for (const auto& [rule, outcome] : c.evaluations) {
        const bool error = std::find(c.errored_rules.begin(), c.errored_rules.end(), rule.str()) !=
                           c.errored_rules.end();
        const bool deciding = c.outcome != Outcome::kAllow && rule.str() == c.rule_id;
        Count(t, rule.str(), outcome, error, deciding);
      }
    }
  }
  if (!input.error().ok()) {
    ReportError("cannot read trace", input.error());
    return false;
  }
  return ok;
}

void PrintTable(const std::vector<RuleInfo>& rules, const Tally& tests, const Tally& traces,
                bool with_tests, bool with_traces) {
  size_t width = 4;
  for (const RuleInfo& r : rules) width = std::max(width, r.id.size());
  auto row = [&](const std::string& rule, const Tally& t) {
    auto it = t.find(rule);
    return it == t.end() ? Counts{} : it->second;
  };
  std::cout << std::left << std::setw(static_cast<int>(width)) << "rule";
  for (const char* source : {"tests", "traces"}) {
    if ((source[1] == 'e' && !with_tests) || (source[1] == 'r' && !with_traces)) continue;
    std::cout << "  " << source << ": evaluated allowed  denied decided errors";
  }
  std::cout << "\n";
  for (const RuleInfo& r : rules) {
    std::cout << std::left << std::setw(static_cast<int>(width)) << r.id << std::right;
    auto print = [](const Counts& c) {
      std::cout << std::setw(18) << c.evaluated << std::setw(8) << c.allowed << std::setw(8)
                << c.denied + c.other << std::setw(8) << c.decided << std::setw(7) << c.errors;
    };
    if (with_tests) print(row(r.id, tests));
    if (with_traces) print(row(r.id, traces));
    std::cout << "\n";
  }
  std::cout << std::left;
}

int RunCoverage(const CoverageOptions& o) {
  auto pack = RulePack::Load(o.dir);
  if (!pack) return ReportError("cannot load rule pack " + o.dir, pack.error());
  // The rules the pack declares (compiling the Lua is what lists them).
  auto probe = PolicyChecker::Create(*pack);
  if (!probe) return ReportError("cannot load the pack's Lua", probe.error());
  const std::vector<RuleInfo>& rules = (*pack)->rules();
  Tally tests, traces;
  uint64_t cases = 0, calls = 0;
  bool readable = true;
  if (!o.no_tests) readable = CountTests(*pack, tests, cases) && readable;
  if (!o.traces.empty()) readable = CountTraces(*pack, o.traces, traces, calls) && readable;
  nlohmann::json per_rule = nlohmann::json::object();
  std::vector<std::string> never_run, never_decided;
  for (const RuleInfo& r : rules) {
    Counts a = tests.count(r.id) ? tests[r.id] : Counts{};
    Counts b = traces.count(r.id) ? traces[r.id] : Counts{};
    nlohmann::json row = {{"file", r.file}};
    if (!o.no_tests) row["tests"] = a.ToJson();
    if (!o.traces.empty()) row["traces"] = b.ToJson();
    per_rule[r.id] = std::move(row);
    if (a.evaluated + b.evaluated == 0) {
      never_run.push_back(r.id);
    } else if (a.decided + b.decided == 0) {
      never_decided.push_back(r.id);
    }
  }
  if (o.common.json) {
    PrintJson({{"pack", (*pack)->name()},
               {"pack_version", (*pack)->version()},
               {"test_cases", cases},
               {"trace_calls", calls},
               {"rules", per_rule},
               {"never_evaluated", never_run},
               {"never_decided", never_decided}});
  } else {
    PrintTable(rules, tests, traces, !o.no_tests, !o.traces.empty());
    std::cout << "\n" << (*pack)->name() << ": " << rules.size() << " rules; ";
    if (!o.no_tests) std::cout << cases << " test cases";
    if (!o.no_tests && !o.traces.empty()) std::cout << ", ";
    if (!o.traces.empty()) std::cout << calls << " gated trace calls";
    std::cout << "\n";
    auto list = [](const char* what, const std::vector<std::string>& ids) {
      std::cout << what << " (" << ids.size() << ")";
      for (const std::string& id : ids) std::cout << " " << id;
      std::cout << "\n";
    };
    list("never evaluated", never_run);
    list("evaluated but never decided a call", never_decided);
  }
  if (!readable) return kExitUsage;
  return never_run.empty() ? kExitOk : kExitCheckFailed;
}

}  // namespace

void AddPolicyCoverage(CLI::App& policy, int& exit_code) {
  auto o = std::make_shared<CoverageOptions>();
  CLI::App* c = policy.add_subcommand(
      "coverage",
      "Which rules the pack's tests and the given traces exercised: per rule, checks it ran "
      "on, allowed, denied and decided; rules never exercised listed (exit 1 if any)");
  c->add_option("dir", o->dir, "Rule pack folder (rules/<pack>)")->required();
  c->add_option("--trace", o->traces, "Trace files to replay as well (docs/trace-format.md)");
  c->add_flag("--no-tests", o->no_tests, "Leave out the pack's tests/*.json");
  AddCommonOptions(*c, o->common);
  c->callback([o, &exit_code] { exit_code = RunCoverage(*o); });
}

}  // namespace taskledger::cli
