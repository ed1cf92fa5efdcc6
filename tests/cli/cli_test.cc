// The taskledger binary as a user drives it: replay scoring and its JSON
// summary, bad trace input, policy test/check, --help and usage errors, and
// the exit-code contract (0 ok, 1 a check failed, 2 usage or input error).
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "cli/cli_runner.h"
#include "taskledger/base/digest.h"

using namespace taskledger::testing;

namespace {

std::string Pack() {
  static const std::string dir = WriteShopPack(TempDir() + "/shop");
  return dir;
}

std::string TraceFile(const std::string& name, const std::string& text) {
  std::string path = TempDir() + "/" + name;
  WriteFile(path, text);
  return path;
}

}  // namespace

TEST_CASE("replay prints each gated decision and a summary, exit 0 when all labels hold") {
  std::string trace = TraceFile("ok.jsonl", ShopTraceLine("a") + "\n" + ShopTraceLine("b") + "\n");
  CliRun r = RunCli({"replay", trace, "--rules", Pack()});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("a c1 cancel_order -> allow"));
  CHECK_THAT(r.out, Catch::Contains("a c2 cancel_order -> deny [shop.confirmed]"));
  CHECK_THAT(r.out, Catch::Contains("expected deny:  2  denied: 2  by the labeled rule: 2"));
  CHECK_THAT(r.out, Catch::Contains("all labeled decisions as expected"));
}

TEST_CASE("replay --json ends with one summary object a report script can read") {
  std::string trace = TraceFile("json.jsonl", ShopTraceLine("a") + "\n");
  CliRun r = RunCli({"replay", trace, "--rules", Pack(), "--json"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  nlohmann::json s = r.LastJson();
  REQUIRE(s.is_object());
  CHECK(s["conversations"] == 1);
  CHECK(s["calls"] == 3);
  CHECK(s["expected_allow"] == 1);
  CHECK(s["allowed_as_expected"] == 1);
  CHECK(s["expected_deny"] == 1);
  CHECK(s["denied_as_expected"] == 1);
  CHECK(s["right_rule"] == 1);
  CHECK(s["events_per_s"].is_number());
  CHECK(s["by_rule"]["shop.confirmed"]["right_rule"] == 1);
  CHECK(s["mismatches"].empty());
}

TEST_CASE("a decision against the trace's label is a mismatch: listed, and exit 1") {
  // Without the yes, the labeled-allow cancellation is blocked.
  std::string line = ShopTraceLine("m");
  line.erase(line.find(R"({"type":"user","text":"yes"},)"), 29);
  std::string trace = TraceFile("mismatch.jsonl", line + "\n");
  CliRun r = RunCli({"replay", trace, "--rules", Pack(), "--json", "-q"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  nlohmann::json s = r.LastJson();
  REQUIRE(s.is_object());
  CHECK(s["allowed_as_expected"] == 0);
  REQUIRE(s["mismatches"].size() == 1);
  CHECK(s["mismatches"][0]["conversation"] == "m");
  CHECK(s["mismatches"][0]["call_id"] == "c1");
  CHECK(s["mismatches"][0]["kind"] == "blocked_but_expected_allow");
}

TEST_CASE(
    "an unreadable trace line is reported with file:line, the replay goes on and exits 2, "
    "fatal at once with --strict, skipped with --allow-unreadable") {
  std::string trace =
      TraceFile("bad.jsonl", ShopTraceLine("a") + "\n{not json\n" +
                                 R"({"conversation":"x","events":[{"type":"shout"}]})" + "\n" +
                                 ShopTraceLine("b") + "\n");
  CliRun plain = RunCli({"replay", trace, "--rules", Pack(), "--json", "-q"});
  INFO(plain.out << plain.err);
  CHECK(plain.exit_code == 2);  // a CI job replaying broken traces must not pass
  CHECK_THAT(plain.err, Catch::Contains(trace + ":2:"));
  CHECK_THAT(plain.err, Catch::Contains(trace + ":3:") && Catch::Contains("unknown type"));
  CHECK_THAT(plain.err, Catch::Contains("2 conversation(s) could not be replayed"));
  CHECK(plain.LastJson()["conversations"] == 2);  // the readable ones were still replayed
  CHECK(plain.LastJson()["failed_conversations"] == 2);

  CliRun lenient =
      RunCli({"replay", trace, "--rules", Pack(), "--json", "-q", "--allow-unreadable"});
  INFO(lenient.out << lenient.err);
  CHECK(lenient.exit_code == 0);
  CHECK_THAT(lenient.err, Catch::Contains(trace + ":2:"));
  CHECK(lenient.LastJson()["failed_conversations"] == 2);

  CliRun strict = RunCli({"replay", trace, "--rules", Pack(), "--strict"});
  CHECK(strict.exit_code == 2);
  CHECK_THAT(strict.err, Catch::Contains(trace + ":2:"));
  CHECK_THAT(strict.out, !Catch::Contains("b c1"));
}

TEST_CASE("replay survives hostile input: deep nesting, binary junk, a huge line") {
  std::string deep = R"({"conversation":"d","events":[{"type":"result","id":"c","output":)" +
                     std::string(50000, '[') + std::string(50000, ']') + "}]}";
  std::string junk("\x00\xff\xfe{\"conversation\":\x01}", 20);
  std::string trace =
      TraceFile("hostile.jsonl", deep + "\n" + junk + "\n" + ShopTraceLine("ok") + "\n");
  CliRun r = RunCli({"replay", trace, "--rules", Pack(), "--json", "-q", "--allow-unreadable"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("deeper than"));
  CHECK(RunCli({"replay", trace, "--rules", Pack(), "--json", "-q"}).exit_code == 2);
  CHECK(r.LastJson()["conversations"] == 1);
}

TEST_CASE(
    "the CLI names its release with --version, and an unknown commands --state is a usage error") {
  CliRun v = RunCli({"--version"});
  CHECK(v.exit_code == 0);
  CHECK_THAT(v.out, Catch::StartsWith("taskledger 0."));
  CliRun bogus = RunCli({"commands", "list", "--state", "bogus"});
  CHECK(bogus.exit_code == 2);
  CHECK_THAT(bogus.err, Catch::Contains("bogus"));
  CHECK(RunCli({"commands", "list", "--state", "uncertain"}).exit_code == 0);
}

TEST_CASE("reading verbs on the in-memory default say it starts empty in a new process") {
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"audit", "list"}, {"metrics"}, {"commands", "list"}}) {
    CliRun r = RunCli(args);
    INFO(args[0] << ": " << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, Catch::Contains("starts empty in every process") &&
                          Catch::Contains("--store redis://"));
  }
}

TEST_CASE("usage and input errors exit 2, --help exits 0") {
  CHECK(RunCli({"replay", "--help"}).exit_code == 0);
  CHECK_THAT(RunCli({"replay", "--help"}).out, Catch::Contains("--rules"));
  for (const char* verb : {"audit", "policy", "render", "metrics", "commands"}) {
    CliRun h = RunCli({verb, "--help"});
    INFO(verb);
    CHECK(h.exit_code == 0);
    CHECK_THAT(h.out, Catch::Contains("--json") || Catch::Contains("test"));
  }
  CHECK(RunCli({}).exit_code == 2);
  CHECK(RunCli({"frobnicate"}).exit_code == 2);
  CHECK(RunCli({"replay", TempDir() + "/missing.jsonl", "--rules", Pack()}).exit_code == 2);
  CHECK(RunCli({"replay", TempDir() + "/missing.jsonl"}).exit_code == 2);  // no --rules
  CHECK(RunCli({"replay", TraceFile("x.jsonl", ""), "--rules", TempDir() + "/nopack"}).exit_code ==
        2);
  CliRun bad_store =
      RunCli({"replay", TraceFile("y.jsonl", ""), "--rules", Pack(), "--store", "ftp://x"});
  CHECK(bad_store.exit_code == 2);
  CHECK_FALSE(bad_store.err.empty());
}

TEST_CASE("policy test runs a pack's tests: exit 0 when all pass, 1 when one fails") {
  CliRun ok = RunCli({"policy", "test", Pack(), "--json"});
  INFO(ok.out << ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(ok.LastJson()["passed"] == 2);
  CHECK(ok.LastJson()["failed"] == 0);

  std::string broken = WriteShopPack(TempDir() + "/shop-broken");
  WriteFile(broken + "/tests/wrong.json", R"({"cases": [
    {"name": "expects the wrong rule",
     "state": {},
     "call": {"tool": "cancel_order", "arguments": {"order_id": "#W9"}},
     "expect": {"decision": "deny", "rule": "shop.confirmed"}}]})");
  CliRun fail = RunCli({"policy", "test", broken});
  INFO(fail.out << fail.err);
  CHECK(fail.exit_code == 1);
  CHECK_THAT(fail.out, Catch::Contains("FAIL tests/wrong.json: expects the wrong rule"));
  CHECK_THAT(fail.out, Catch::Contains("2 passed, 1 failed"));
}

TEST_CASE("policy check prints one decision as JSON and exits 1 when the call is not allowed") {
  const std::string state = TempDir() + "/state.json";
  const std::string call = TempDir() + "/call.json";
  WriteFile(state, R"({"facts": {"order.#W1.status": "delivered"}})");
  WriteFile(call, R"({"tool": "cancel_order", "arguments": {"order_id": "#W1"}})");
  CliRun deny =
      RunCli({"policy", "check", "--rules", Pack(), "--state", state, "--call", call, "--json"});
  INFO(deny.out << deny.err);
  CHECK(deny.exit_code == 1);
  nlohmann::json d = deny.LastJson();
  CHECK(d["decision"] == "deny");
  CHECK(d["rule"] == "shop.pending_only");
  CHECK(d["reason"] == "order #W1 is delivered");
  CHECK_FALSE(d["rules"].empty());

  const std::string read = TempDir() + "/read.json";
  WriteFile(read, R"({"tool": "get_order", "arguments": {"order_id": "#W1"}})");
  CliRun allow =
      RunCli({"policy", "check", "--rules", Pack(), "--state", state, "--call", read, "--json"});
  CHECK(allow.exit_code == 0);
  CHECK(allow.LastJson()["decision"] == "allow");
  CHECK(allow.LastJson()["read_only"] == true);

  WriteFile(call, "{\"tool\": 7}");
  CHECK(
      RunCli({"policy", "check", "--rules", Pack(), "--state", state, "--call", call}).exit_code ==
      2);
}

TEST_CASE("policy check shows the entries each rule read, with their evidence") {
  const std::string state = TempDir() + "/state-reads.json";
  const std::string call = TempDir() + "/call-reads.json";
  WriteFile(state, R"({"facts": {"order.#W1.status": {"$entry": {
      "value": "delivered", "source": "tool", "source_id": "get_order#c0", "turn": 3}}}})");
  WriteFile(call, R"({"tool": "cancel_order", "arguments": {"order_id": "#W1"}})");
  CliRun deny =
      RunCli({"policy", "check", "--rules", Pack(), "--state", state, "--call", call, "--json"});
  INFO(deny.out << deny.err);
  REQUIRE(deny.exit_code == 1);
  nlohmann::json d = deny.LastJson();
  nlohmann::json deciding;
  for (const auto& r : d["rules"]) {
    if (r["id"] == d["rule"]) deciding = r;
  }
  REQUIRE(deciding.contains("reads"));
  nlohmann::json status;
  for (const auto& r : deciding["reads"]) {
    if (r["key"] == "order.#W1.status") status = r;
  }
  CHECK(status["category"] == "fact");
  CHECK(status["present"] == true);
  CHECK(status["source_id"] == "get_order#c0");
  CHECK(status["turn"] == 3);
  CHECK(status["verified"] == true);
  CHECK(status["digest"] == taskledger::ArgsHash("delivered").substr(0, 16));
}

namespace {

// The shop pack with shop.confirmed broken: its check calls a function the
// ledger does not have, so every evaluation of it raises.
std::string BrokenPack() {
  static const std::string dir = [] {
    std::string d = WriteShopPack(TempDir() + "/broken");
    std::string lua = ReadFile(d + "/shop.lua");
    const std::string good = "if ledger.confirmed(call) then return allow() end";
    lua.replace(lua.find(good), good.size(), "if ledger.nope(call) then return allow() end");
    WriteFile(d + "/shop.lua", lua);
    return d;
  }();
  return dir;
}

}  // namespace

TEST_CASE("a rule that raises is counted as a policy error, never as the labeled rule, exit 1") {
  std::string trace = TraceFile("errors.jsonl", ShopTraceLine("e") + "\n");
  CliRun r = RunCli({"replay", trace, "--rules", BrokenPack(), "--json", "-q"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  nlohmann::json s = r.LastJson();
  REQUIRE(s.is_object());
  // The labeled deny by shop.confirmed was held back, but by the error.
  CHECK(s["denied_as_expected"] == 1);
  CHECK(s["right_rule"] == 0);
  CHECK(s["by_rule"]["shop.confirmed"]["policy_errors"] == 1);
  CHECK(s["policy_errors"] == 2);  // both cancels ran the broken rule
  CHECK(s["policy_errors_by_rule"]["shop.confirmed"] == 2);
  REQUIRE(s["mismatches"].size() == 2);
  CHECK(s["mismatches"][0]["kind"] == "policy_error");
  CHECK(s["mismatches"][1]["kind"] == "policy_error");

  CliRun text = RunCli({"replay", trace, "--rules", BrokenPack()});
  INFO(text.out << text.err);
  CHECK(text.exit_code == 1);
  CHECK_THAT(text.out, Catch::Contains("POLICY ERROR") && !Catch::Contains("(as expected)"));
  CHECK_THAT(text.out, Catch::Contains("policy errors: 2 in 2 calls (shop.confirmed x2)"));
  CHECK_THAT(text.err, Catch::Contains("--allow-policy-errors"));

  // -q mismatch lines carry the reason, here the rule's error.
  CliRun quiet = RunCli({"replay", trace, "--rules", BrokenPack(), "-q"});
  CHECK_THAT(quiet.out, Catch::Contains("MISMATCH e c2 cancel_order") &&
                            Catch::Contains("policy error in rule shop.confirmed"));

  // Per-call JSON flags the call; the opt-out still reports but exits on the labels alone.
  CliRun lenient =
      RunCli({"replay", trace, "--rules", BrokenPack(), "--json", "--allow-policy-errors"});
  CHECK(lenient.exit_code == 1);  // the mismatches remain
  CHECK_THAT(lenient.out, Catch::Contains(R"("errored_rules":["shop.confirmed"])"));
  CHECK_THAT(lenient.err, !Catch::Contains("--allow-policy-errors"));
}

TEST_CASE("an unlabeled call decided by a failing rule still fails the replay") {
  std::string line = ShopTraceLine("u");
  for (std::string label : {R"(,"expect":{"decision":"allow"})",
                            R"(,"expect":{"decision":"deny","rule":"shop.confirmed"})"}) {
    auto at = line.find(label);
    REQUIRE(at != std::string::npos);
    line.erase(at, label.size());
  }
  std::string trace = TraceFile("unlabeled.jsonl", line + "\n");
  CliRun r = RunCli({"replay", trace, "--rules", BrokenPack(), "--json", "-q"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.LastJson()["mismatches"].empty());
  CHECK(r.LastJson()["policy_errors"] == 2);
  CHECK(
      RunCli({"replay", trace, "--rules", BrokenPack(), "-q", "--allow-policy-errors"}).exit_code ==
      0);
  CHECK(RunCli({"replay", trace, "--rules", Pack(), "-q"}).exit_code == 0);
}

TEST_CASE("a pack without extract.json replays, and policy test says when it has no tests") {
  std::string dir = WriteShopPack(TempDir() + "/bare");
  std::filesystem::remove(dir + "/extract.json");
  std::string trace = TraceFile("bare.jsonl", ShopTraceLine("n") + "\n");
  CliRun r = RunCli({"replay", trace, "--rules", dir, "--json", "-q"});
  INFO(r.out << r.err);
  CHECK_THAT(r.err, !Catch::Contains("cannot open session"));
  CHECK(r.LastJson()["conversations"] == 1);
  CHECK(r.LastJson()["failed_conversations"] == 0);
  // Nothing extracts the order's status, so the labeled-allow cancel is denied.
  CHECK(r.exit_code == 1);

  std::filesystem::remove_all(dir + "/tests");
  CliRun t = RunCli({"policy", "test", dir});
  INFO(t.out << t.err);
  CHECK(t.exit_code == 1);
  CHECK_THAT(t.err, Catch::Contains("has no policy tests"));
  CliRun f = RunCli({"policy", "test", Pack(), "--filter", "no such case"});
  CHECK(f.exit_code == 1);
  CHECK_THAT(f.err, Catch::Contains("matches --filter no such case"));
}

TEST_CASE("policy check and policy test show what rules wrote with log(), not in the reason") {
  const std::string dir = TempDir() + "/logging";
  WriteFile(dir + "/pack.json", R"({"name": "logging", "tools": {"writes": ["cancel_order"]}})");
  WriteFile(dir + "/rules.lua", R"(
rule { id = "l.status", tools = {"cancel_order"}, check = function(call, ledger)
  local order = ledger.record("order", call.args.order_id)
  log("order", call.args.order_id, "is", order and order.status)
  if order and order.status == "pending" then return allow() end
  return deny("only pending orders can be cancelled")
end }
)");
  WriteFile(dir + "/tests/cases.json", R"({"cases": [
    {"name": "expects allow but the order is delivered",
     "state": {"facts": {"order.#W.1.status": "delivered"}},
     "call": {"tool": "cancel_order", "arguments": {"order_id": "#W.1"}},
     "expect": {"decision": "allow"}}]})");
  const std::string state = TempDir() + "/log-state.json";
  const std::string call = TempDir() + "/log-call.json";
  // The id holds a dot: the state gives its escaped key, the rule its plain id.
  WriteFile(state, R"({"facts": {"order.#W%2E1.status": "delivered"}})");
  WriteFile(call, R"({"tool": "cancel_order", "arguments": {"order_id": "#W.1"}})");
  CliRun check =
      RunCli({"policy", "check", "--rules", dir, "--state", state, "--call", call, "--json"});
  INFO(check.out << check.err);
  CHECK(check.exit_code == 1);
  nlohmann::json d = check.LastJson();
  CHECK(d["reason"] == "only pending orders can be cancelled");
  CHECK(d["rules"][0]["log"] == nlohmann::json::array({"order #W.1 is delivered"}));

  // The test case's state uses the unescaped key: the record is not found,
  // and the log line shows it (what log() is for).
  CliRun test = RunCli({"policy", "test", dir});
  INFO(test.out << test.err);
  CHECK(test.exit_code == 1);
  CHECK_THAT(test.out, Catch::Contains("  log l.status: order #W.1 is nil"));
}
