// `taskledger audit` with a pack's pack.json "render" (internal, redact): the
// auditor still sees every entry, and `audit show --rules` / `audit --html
// --rules` also say which entries the agent's prompt never held (internal)
// and which it held with fields replaced (redacted). Over Redis, in another
// process than the replay that wrote the conversation.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli/cli_runner.h"
#include "support/redis_server.h"
#include "taskledger/ledger/redis_store.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// A pack whose get_customer output is kept whole (customer.<id>) and whose
// status is a field (customer.<id>.tier); render hides the tier and redacts
// the date of birth inside the whole record.
std::string WritePack(const std::string& dir, const std::string& render) {
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/pack.json", R"({"name": "crm", "tools": {"read_only": ["get_customer"],
    "writes": ["email_customer"]}, "render": )" +
                                    render + "}");
  WriteFile(dir + "/extract.json", R"({"tools": {"get_customer": [
    {"id": "customer.record", "path": "/profile", "category": "fact", "key": "customer.{@id}"},
    {"id": "customer.tier", "path": "/tier", "category": "fact", "key": "customer.{@id}.tier"}]}})");
  WriteFile(dir + "/policy.lua", R"(rule { id = "crm.ok", tools = {"email_customer"},
    check = function(call, ledger) return allow() end })");
  return dir;
}

const char* kTrace =
    R"({"conversation":"crm-1","events":[)"
    R"({"type":"call","id":"c0","tool":"get_customer","arguments":{"id":"C7"}},)"
    R"({"type":"result","id":"c0","output":{"tier":"gold","profile":)"
    R"({"name":"Ada","dob":"1990-02-03"}}},)"
    R"({"type":"call","id":"c1","tool":"email_customer","arguments":{"id":"C7"},"writes":true,)"
    R"("expect":{"decision":"allow"}}]})";

}  // namespace

TEST_CASE("audit show and the audit page mark what pack.json render kept out of the prompt",
          "[redis]") {
  const std::string url = SharedRedisUrl();
  const std::string tenant = "cli-audit-vis-" + std::to_string(::getpid());
  const std::string pack =
      WritePack(TempDir() + "/audit-vis-pack",
                R"({"internal": ["customer.*.tier"], "redact": {"customer.*": ["/dob"]}})");
  const std::string trace = TempDir() + "/audit-vis.jsonl";
  WriteFile(trace, std::string(kTrace) + "\n");
  CliRun replay = RunCli(
      {"replay", trace, "--rules", pack, "--store", url, "--tenant", tenant, "--prefix", "", "-q"});
  INFO(replay.out << replay.err);
  REQUIRE(replay.exit_code == 0);
  auto with = [&](std::vector<std::string> args) {
    for (const std::string& a : {std::string("--store"), url, std::string("--tenant"), tenant}) {
      args.push_back(a);
    }
    return RunCli(args);
  };

  // Without --rules: the auditor's view as before, no marks.
  CliRun plain = with({"audit", "show", "crm-1"});
  INFO(plain.out << plain.err);
  REQUIRE(plain.exit_code == 0);
  CHECK_THAT(plain.out, Catch::Contains("1990-02-03") && Catch::Contains("gold"));
  CHECK_THAT(plain.out, !Catch::Contains("kept out of the prompt"));

  // With --rules: still every entry and value, then what the prompt left out.
  CliRun marked = with({"audit", "show", "crm-1", "--rules", pack});
  INFO(marked.out << marked.err);
  REQUIRE(marked.exit_code == 0);
  CHECK_THAT(marked.out, Catch::Contains("1990-02-03") && Catch::Contains("gold"));
  CHECK_THAT(marked.out,
             Catch::Contains("kept out of the prompt by pack.json \"render\": 1 internal, "
                             "1 redacted\n  internal  fact customer.C7.tier\n"
                             "  redacted  fact customer.C7\n"));

  CliRun json = with({"audit", "show", "crm-1", "--rules", pack, "--json"});
  REQUIRE(json.exit_code == 0);
  const nlohmann::json prompt = json.LastJson()["prompt"];
  CHECK(prompt["internal"] ==
        nlohmann::json::parse(R"([{"category": "fact", "key": "customer.C7.tier"}])"));
  CHECK(prompt["redacted"] ==
        nlohmann::json::parse(R"([{"category": "fact", "key": "customer.C7"}])"));
  CHECK(json.LastJson()["state"].dump().find("1990-02-03") != std::string::npos);

  // The render verb agrees: the prompt itself holds neither the tier nor the dob.
  CliRun render = with({"render", "crm-1", "--json", "--rules", pack});
  REQUIRE(render.exit_code == 0);
  CHECK(render.LastJson()["hidden"] == 1);
  CHECK(render.LastJson()["redacted"] == 1);

  // A redact pointer that selects nothing changes no value: nothing listed.
  const std::string idle =
      WritePack(TempDir() + "/audit-vis-idle", R"({"redact": {"customer.*": ["/passport"]}})");
  CliRun none = with({"audit", "show", "crm-1", "--rules", idle});
  REQUIRE(none.exit_code == 0);
  CHECK_THAT(none.out, Catch::Contains("0 internal, 0 redacted"));

  // The audit page lists the same marks under the conversation's final state.
  const std::string html = TempDir() + "/audit-vis.html";
  CliRun page = with({"audit", "--html", html, "--rules", pack});
  INFO(page.out << page.err);
  REQUIRE(page.exit_code == 0);
  const std::string text = ReadFile(html);
  CHECK_THAT(text, Catch::Contains("<pre class=\"prompt-marks\">kept out of the prompt by "
                                   "pack.json &quot;render&quot;: 1 internal, 1 redacted"));
  CHECK_THAT(text, Catch::Contains("  internal  fact customer.C7.tier"));

  // A malformed render section or a missing pack: exit 2, nothing printed as if fine.
  const std::string bad = WritePack(TempDir() + "/audit-vis-bad", R"({"internal": "x"})");
  CliRun broken = with({"audit", "show", "crm-1", "--rules", bad});
  CHECK(broken.exit_code == 2);
  CHECK_THAT(broken.err, Catch::Contains("internal must be an array"));
  CHECK(broken.out.empty());
  CHECK(with({"audit", "show", "crm-1", "--rules", TempDir() + "/no-such-pack"}).exit_code == 2);
  CHECK(with({"audit", "--html", html, "--rules", bad}).exit_code == 2);

  auto s = OpenStore(url);
  REQUIRE(s.has_value());
  CHECK((*s)->DropConversation({tenant, "crm-1"}).ok());
}

TEST_CASE("replay --audit-html marks what the pack's render kept out of the prompt") {
  const std::string pack =
      WritePack(TempDir() + "/replay-vis-pack",
                R"({"internal": ["customer.*.tier"], "redact": {"customer.*": ["/dob"]}})");
  const std::string trace = TempDir() + "/replay-vis.jsonl";
  WriteFile(trace, std::string(kTrace) + "\n");
  const std::string html = TempDir() + "/replay-vis.html";
  CliRun replay = RunCli({"replay", trace, "--rules", pack, "--audit-html", html, "-q"});
  INFO(replay.out << replay.err);
  REQUIRE(replay.exit_code == 0);
  const std::string text = ReadFile(html);
  // The auditor still sees every value, and which of them the prompt never held.
  CHECK_THAT(text, Catch::Contains("1990-02-03") && Catch::Contains("gold"));
  CHECK_THAT(text, Catch::Contains("<pre class=\"prompt-marks\">kept out of the prompt by "
                                   "pack.json &quot;render&quot;: 1 internal, 1 redacted"));
  CHECK_THAT(text, Catch::Contains("  internal  fact customer.C7.tier"));
  CHECK_THAT(text, Catch::Contains("  redacted  fact customer.C7"));

  // A malformed render section: exit 2 before anything is replayed, no page written.
  const std::string bad = WritePack(TempDir() + "/replay-vis-bad", R"({"internal": "x"})");
  const std::string none = TempDir() + "/replay-vis-bad.html";
  CliRun broken = RunCli({"replay", trace, "--rules", bad, "--audit-html", none, "-q"});
  CHECK(broken.exit_code == 2);
  CHECK_THAT(broken.err, Catch::Contains("internal must be an array"));
  CHECK_FALSE(std::filesystem::exists(none));
}
