// `taskledger policy coverage` as a pack author uses it: per rule, what the
// pack's tests and replayed traces made it do, the rules never exercised (exit
// 1) and those that never decided a call, and exit 2 on input it cannot read.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "cli/cli_runner.h"

using namespace taskledger::testing;

namespace {

const std::string kSource = TASKLEDGER_SOURCE_DIR;

// A pack whose tests exercise "cov.ask" (deny and allow) and "cov.broken"
// (which raises: a policy error), never "cov.idle" (no test calls its tool).
std::string WriteCoveragePack() {
  std::string dir = TempDir() + "/cov";
  std::filesystem::create_directories(dir + "/tests");
  WriteFile(dir + "/pack.json", R"({"name": "cov", "tools": {
    "read_only": ["get_*"], "writes": ["send", "purge", "wipe"]}})");
  WriteFile(dir + "/policy.lua", R"(
rule { id = "cov.ask", tools = {"send"}, priority = 2,
  check = function(call, ledger)
    if call.args.to == "mallory" then return deny("not to mallory") end
    return allow()
  end }
rule { id = "cov.quiet", tools = {"send"}, priority = 1,
  check = function(call, ledger) return allow() end }
rule { id = "cov.broken", tools = {"wipe"}, check = function(call, ledger) return ledger.nope() end }
rule { id = "cov.idle", tools = {"purge"}, check = function(call, ledger) return deny("never") end }
)");
  WriteFile(dir + "/tests/cases.json", R"({"cases": [
    {"name": "to bob", "state": {}, "call": {"tool": "send", "arguments": {"to": "bob"}},
     "expect": {"decision": "allow"}},
    {"name": "to mallory", "state": {}, "call": {"tool": "send", "arguments": {"to": "mallory"}},
     "expect": {"decision": "deny", "rule": "cov.ask"}},
    {"name": "wipe", "state": {}, "call": {"tool": "wipe"}, "expect": {"decision": "deny"}}
  ]})");
  return dir;
}

}  // namespace

TEST_CASE("policy coverage counts each rule's evaluations and lists the rules never run") {
  const std::string dir = WriteCoveragePack();
  CliRun r = RunCli({"policy", "coverage", dir, "--json"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);  // cov.idle never ran
  const nlohmann::json j = r.LastJson();
  CHECK(j["test_cases"] == 3);
  const nlohmann::json& ask = j["rules"]["cov.ask"]["tests"];
  CHECK(ask["evaluated"] == 2);
  CHECK(ask["allowed"] == 1);
  CHECK(ask["denied"] == 1);
  CHECK(ask["decided"] == 1);
  // Ran on one call, allowed it; the deny to mallory came before it.
  CHECK(j["rules"]["cov.quiet"]["tests"]["evaluated"] == 1);
  CHECK(j["rules"]["cov.quiet"]["tests"]["decided"] == 0);
  CHECK(j["rules"]["cov.broken"]["tests"]["errors"] == 1);
  CHECK(j["never_evaluated"] == nlohmann::json::array({"cov.idle"}));
  CHECK(j["never_decided"] == nlohmann::json::array({"cov.quiet"}));

  CliRun text = RunCli({"policy", "coverage", dir});
  CHECK(text.exit_code == 1);
  CHECK_THAT(text.out, Catch::Contains("never evaluated (1) cov.idle"));
  CHECK_THAT(text.out, Catch::Contains("never decided a call (1) cov.quiet"));
}

TEST_CASE("policy coverage replays traces: the retail pack exercises every rule") {
  const std::string data = kSource + "/tests/data/tau-bench-retail/";
  CliRun r =
      RunCli({"policy", "coverage", kSource + "/rules/retail", "--trace",
              data + "retail_gold.jsonl", "--trace", data + "retail_violations.jsonl", "--json"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  const nlohmann::json j = r.LastJson();
  CHECK(j["never_evaluated"].empty());
  CHECK(j["never_decided"].empty());
  uint64_t decided = 0;
  for (const auto& [rule, row] : j["rules"].items()) {
    INFO(rule);
    CHECK(row["traces"]["evaluated"] > 0);
    CHECK(row["traces"]["errors"] == 0);
    decided += row["traces"]["decided"].get<uint64_t>();
  }
  // Every gated call of the violations is denied by some rule (515 labeled),
  // and the gold trace's denials are decided by a rule too.
  CHECK(decided >= 515);
  CHECK(j["trace_calls"] > decided);
}

TEST_CASE("policy coverage: unreadable input is exit 2") {
  const std::string dir = WriteCoveragePack();
  const std::string bad = TempDir() + "/bad.jsonl";
  WriteFile(bad, "{not json\n");
  CliRun r = RunCli({"policy", "coverage", dir, "--trace", bad});
  CHECK(r.exit_code == 2);
  CHECK(RunCli({"policy", "coverage", TempDir() + "/missing"}).exit_code == 2);
  CHECK(RunCli({"policy", "coverage", dir, "--trace", TempDir() + "/none.jsonl"}).exit_code == 2);
}
