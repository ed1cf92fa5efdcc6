// `taskledger policy test DIR` runs a rule pack's tests (tests/*.json, see
// docs/rule-api.md) and `taskledger policy check` decides one call against a
// given state (`policy coverage`: policy_coverage.cc). test: exit 0 all pass, 1 some fail, 2 the
// pack or a case is malformed. check: exit 0 allowed, 1 not allowed, 2 bad input.
#include <iostream>
#include <string>
#include <vector>

#include "cli_common.h"
#include "policy_cases.h"
#include "policy_coverage.h"
#include "taskledger/base/clock.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/checker.h"
#include "taskledger/policy/decision.h"
#include "taskledger/policy/test_state.h"
#include "verbs.h"

namespace taskledger::cli {
namespace {

struct PolicyTestOptions {
  CommonOptions common;
  std::string dir;
  std::string filter;  // run only cases whose name contains this
  bool verbose = false;
};

struct PolicyCheckOptions {
  CommonOptions common;
  std::string rules, state, call;
};

nlohmann::json EncodeDecision(const PolicyDecision& d) {
  nlohmann::json rules = nlohmann::json::array();
  for (const RuleEvaluation& r : d.rules) {
    nlohmann::json e = {
        {"id", r.rule_id}, {"outcome", OutcomeName(r.outcome)}, {"reason", r.reason}};
    if (r.error) e["error"] = true;
    if (!r.log.empty()) e["log"] = r.log;
    rules.push_back(std::move(e));
  }
  return {{"decision", OutcomeName(d.outcome)},
          {"rule", d.rule_id},
          {"reason", d.reason},
          {"rules", std::move(rules)},
          {"tool_class", ToolClassName(d.tool_class)},
          {"read_only", d.read_only()},
          {"pack_version", d.pack_version},
          {"latency_us", d.latency_us}};
}

int RunPolicyTest(const PolicyTestOptions& o) {
  auto pack = RulePack::Load(o.dir);
  if (!pack) return ReportError("cannot load rule pack " + o.dir, pack.error());
  uint64_t passed = 0, failed = 0, malformed = 0;
  nlohmann::json failures = nlohmann::json::array();
  for (const auto& [path, file] : (*pack)->tests()) {
    auto cases = file.find("cases");
    if (cases == file.end() || !cases->is_array()) {
      std::cerr << path << ": \"cases\" must be an array\n";
      ++malformed;
      continue;
    }
    for (size_t i = 0; i < cases->size(); ++i) {
      const nlohmann::json& c = (*cases)[i];
      std::string name = c.is_object() ? c.value("name", "case " + std::to_string(i)) : "case";
      if (!o.filter.empty() && name.find(o.filter) == std::string::npos) continue;
      const std::string where = path + ": " + name;
      Status problem;
      PolicyDecision decision;
      if (!c.is_object() || !c.contains("call") || !c.contains("expect")) {
        problem = Status::InvalidArgument("a case needs \"call\" and \"expect\"");
      } else if (auto call = ParsePolicyCall(c["call"]); !call) {
        problem = call.error();
      } else if (auto d = DecidePolicyCase(*pack, c, *call); !d) {
        problem = d.error();
      } else {
        decision = *d;
        problem = MatchExpectation(decision, c["expect"]);
      }
      const bool bad_case = !problem.ok() && problem.code() != StatusCode::kFailedPrecondition;
      if (problem.ok()) {
        ++passed;
        if (o.verbose && !o.common.json) std::cout << "PASS " << where << "\n";
        continue;
      }
      bad_case ? ++malformed : ++failed;
      // What the rules wrote with log() (cases given a "state"; a case
      // replayed from "events" reports the decision without its rules).
      nlohmann::json logs = nlohmann::json::array();
      for (const RuleEvaluation& r : decision.rules) {
        for (const std::string& line : r.log) logs.push_back(r.rule_id.str() + ": " + line);
      }
      failures.push_back({{"file", path},
                          {"case", name},
                          {"message", problem.ToString()},
                          {"decision", OutcomeName(decision.outcome)},
                          {"rule", decision.rule_id},
                          {"reason", decision.reason},
                          {"log", logs}});
      if (!o.common.json) {
        // MatchExpectation's message already says what the decision was.
        std::cout << (bad_case ? "ERROR " : "FAIL ") << where << ": " << problem.message() << "\n";
        for (const auto& line : logs) std::cout << "  log " << line.get<std::string>() << "\n";
      }
    }
  }
  if (o.common.json) {
    PrintJson({{"pack", (*pack)->name()},
               {"pack_version", (*pack)->version()},
               {"passed", passed},
               {"failed", failed},
               {"errors", malformed},
               {"failures", failures}});
  } else {
    std::cout << (*pack)->name() << ": " << passed << " passed, " << failed << " failed";
    if (malformed > 0) std::cout << ", " << malformed << " malformed";
    std::cout << "\n";
  }
  if (malformed > 0) return kExitUsage;
  if (passed + failed == 0) {
    // Nothing was tested, so nothing is known to pass: a CI job must not go
    // green on a pack whose tests went missing. Say which of the two it is.
    if ((*pack)->tests().empty()) {
      std::cerr << "taskledger: " << o.dir
                << " has no policy tests (tests/*.json; see docs/rule-api.md, \"Policy "
                   "tests\"): nothing was checked, exit 1\n";
    } else if (!o.filter.empty()) {
      std::cerr << "taskledger: no test case in " << o.dir << "/tests matches --filter " << o.filter
                << ": nothing was checked, exit 1\n";
    } else {
      std::cerr << "taskledger: the test files in " << o.dir
                << "/tests hold no cases: nothing was checked, exit 1\n";
    }
    return kExitCheckFailed;
  }
  return failed == 0 ? kExitOk : kExitCheckFailed;
}

int RunPolicyCheck(const PolicyCheckOptions& o) {
  auto pack = RulePack::Load(o.rules);
  if (!pack) return ReportError("cannot load rule pack " + o.rules, pack.error());
  auto state_json = ReadJsonFile(o.state);
  if (!state_json) return ReportError("cannot read state", state_json.error());
  auto call_json = ReadJsonFile(o.call);
  if (!call_json) return ReportError("cannot read call", call_json.error());
  auto call = ParsePolicyCall(*call_json);
  if (!call) return ReportError(o.call, call.error());
  const int64_t now = SystemClock().NowMs();
  auto state = LoadTestState(*state_json, now);
  if (!state) return ReportError(o.state, state.error());
  auto checker = PolicyChecker::Create(*pack);
  if (!checker) return ReportError("cannot load the pack's Lua", checker.error());
  PolicyDecision d = (*checker)->Check(*call, *state, ViewKey{}, now);
  // The entries each rule read, with their evidence, as a session records them.
  if (Status s = (*checker)->ResolveReads(d, *state); !s.ok()) {
    return ReportError("cannot resolve the rules' reads", s);
  }
  nlohmann::json out = EncodeDecision(d);
  const nlohmann::json recorded = EncodeDecision(MakeDecisionRecord(d, *call, {}));
  for (size_t i = 0; i < out["rules"].size() && i < recorded["rules"].size(); ++i) {
    if (recorded["rules"][i].contains("reads"))
      out["rules"][i]["reads"] = recorded["rules"][i]["reads"];
  }
  out["tool"] = call->tool;
  if (o.common.json) {
    PrintJson(out);
  } else {
    std::cout << out.dump(2) << "\n";
  }
  return d.allowed() ? kExitOk : kExitCheckFailed;
}

}  // namespace

void AddPolicyVerb(CLI::App& app, int& exit_code) {
  CLI::App* verb = app.add_subcommand("policy", "Test rule packs and check single calls");
  verb->require_subcommand(1);

  auto test = std::make_shared<PolicyTestOptions>();
  CLI::App* t = verb->add_subcommand("test", "Run a rule pack's tests/*.json");
  t->add_option("dir", test->dir, "Rule pack folder (rules/<pack>)")->required();
  t->add_option("--filter", test->filter, "Run only cases whose name contains this text");
  t->add_flag("-v,--verbose", test->verbose, "Also list passing cases");
  AddCommonOptions(*t, test->common);
  t->callback([test, &exit_code] { exit_code = RunPolicyTest(*test); });

  auto check = std::make_shared<PolicyCheckOptions>();
  CLI::App* c = verb->add_subcommand(
      "check", "Decide one call against a ledger state (prints the decision as JSON)");
  c->add_option("--rules", check->rules, "Rule pack folder")->required();
  c->add_option(
       "--state", check->state,
       "State JSON: {\"facts\":{},\"identifiers\":{},\"constraints\":{},\"conditions\":{}}")
      ->required();
  c->add_option("--call", check->call, "Call JSON: {\"tool\":...,\"arguments\":{...}}")->required();
  AddCommonOptions(*c, check->common);
  c->callback([check, &exit_code] { exit_code = RunPolicyCheck(*check); });

  AddPolicyCoverage(*verb, exit_code);
}

}  // namespace taskledger::cli
