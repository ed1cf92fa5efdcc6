// `taskledger pack new` and `taskledger pack lint` as a pack author uses them:
// a pack scaffolded from the retail tool schemas loads and its tests pass, an
// existing directory is never overwritten, and lint reports each kind of gap
// (and nothing on the shipped packs).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include "cli/cli_runner.h"

using namespace taskledger::testing;

namespace {

const std::string kSource = TASKLEDGER_SOURCE_DIR;

// Tool schemas in the wrapped OpenAI form ({"type": "function", "function": ...}).
const char* kWrappedTools = R"([
  {"type": "function", "function": {"name": "get_ticket", "description": "Read a ticket.",
   "parameters": {"type": "object", "properties": {"ticket_id": {"type": "string"}},
                  "required": ["ticket_id"]}}},
  {"type": "function", "function": {"name": "close_ticket", "description": "Close a ticket.\nFinal.",
   "parameters": {"type": "object", "properties": {"ticket_id": {"type": "string"}},
                  "required": ["ticket_id"]}}}
])";

// A pack with one instance of every lint finding.
std::string WriteFlawedPack() {
  std::string dir = TempDir() + "/flawed";
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/pack.json", R"({"name": "flawed", "tools": {
    "read_only": ["get_order"], "writes": ["cancel_order", "refund_order"]}})");
  WriteFile(dir + "/extract.json", R"({"tools": {
    "get_order": [{"id": "o.status", "path": "/status", "category": "fact",
                   "key": "order.{/id}.status"}],
    "get_invoice": [{"id": "i.total", "path": "/total", "category": "fact", "key": "invoice.{/id}.total"}]
  }})");
  WriteFile(dir + "/policy.lua", R"(
-- ledger.fact("in.a.comment") is not a read
rule { id = "flawed.cancel", tools = {"cancel_order"},
  check = function(call, ledger)
    if ledger.fact("order." .. call.args.id .. ".status") ~= "pending" then return deny("no") end
    if ledger.fact(std.key("order", call.args.id, "owner")) == nil then return deny("who") end
    if ledger.condition("confirmed") ~= true then return deny("confirm") end
    local order = std.key("order", call.args.id)
    if ledger.fact(order .. ".status") == nil or ledger.fact(order .. ".stauts") then
      return deny("a key prefix kept in a variable")
    end
    if ledger.known("fact", order .. ".paid") or ledger.known("fact", order .. ".status") then
      return deny("known reads a key")
    end
    if ledger.single("identifier", "user.auth.") then return deny("single reads a prefix") end
    if ledger.fields("fact", order, "status", "paid", "gone") then return deny("fields") end
    return allow()
  end }
rule { id = "flawed.ghost", tools = {"delete_order"}, check = function() return allow() end }
rule { id = "flawed.reader", tools = {"get_*"}, check = function() return allow() end }
)");
  return dir;
}

}  // namespace

TEST_CASE("pack new scaffolds a pack from the retail tool schemas that loads and tests green") {
  const std::string tools = kSource + "/../shared/corpus/retail_tools.json";
  if (!std::filesystem::exists(tools)) {
    WARN("corpus not present at " << tools << "; skipped");
    return;
  }
  const std::string dir = TempDir() + "/new-retail";
  CliRun r = RunCli({"pack", "new", "myretail", "--tools", tools, "--dir", dir});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("16 tools"));
  const nlohmann::json manifest = nlohmann::json::parse(ReadFile(dir + "/pack.json"));
  CHECK(manifest["name"] == "myretail");
  CHECK_THAT(manifest["review"].get<std::string>(), Catch::Contains("REVIEW"));
  const auto& ro = manifest["tools"]["read_only"];
  const auto& wr = manifest["tools"]["writes"];
  CHECK(std::find(ro.begin(), ro.end(), "get_order_details") != ro.end());
  CHECK(std::find(ro.begin(), ro.end(), "find_user_id_by_email") != ro.end());
  CHECK(std::find(wr.begin(), wr.end(), "cancel_pending_order") != wr.end());
  // Not a known read prefix: a write until the author says otherwise.
  CHECK(std::find(wr.begin(), wr.end(), "calculate") != wr.end());
  const std::string lua = ReadFile(dir + "/policy.lua");
  CHECK_THAT(lua, Catch::Contains("id = \"myretail.cancel_pending_order.review\""));
  CHECK_THAT(lua, Catch::Contains("Required arguments (call.args): order_id, reason"));

  CliRun test = RunCli({"policy", "test", dir, "--json"});
  INFO(test.out << test.err);
  CHECK(test.exit_code == 0);
  CHECK(test.LastJson()["failed"] == 0);
  CHECK(test.LastJson()["passed"].get<int>() == static_cast<int>(wr.size()) + 1);
  // The scaffold lints clean: every write tool has its (example) rule.
  CliRun lint = RunCli({"pack", "lint", dir});
  INFO(lint.out << lint.err);
  CHECK(lint.exit_code == 0);
}

TEST_CASE("pack new reads the wrapped function format and its example rule gates the write") {
  const std::string tools = TempDir() + "/wrapped.json";
  WriteFile(tools, kWrappedTools);
  const std::string dir = TempDir() + "/tickets";
  CliRun r = RunCli({"pack", "new", "tickets", "--tools", tools, "--dir", dir});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CliRun check = RunCli({"policy", "test", dir});
  INFO(check.out << check.err);
  CHECK(check.exit_code == 0);
  CHECK_THAT(check.out, Catch::Contains("2 passed, 0 failed"));
}

TEST_CASE("pack new refuses an existing directory and bad schemas, exit 2, nothing written") {
  const std::string tools = TempDir() + "/wrapped2.json";
  WriteFile(tools, kWrappedTools);
  const std::string dir = TempDir() + "/existing";
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/keep.txt", "mine");
  CliRun r = RunCli({"pack", "new", "tickets", "--tools", tools, "--dir", dir});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("already exists"));
  CHECK(ReadFile(dir + "/keep.txt") == "mine");
  CHECK_FALSE(std::filesystem::exists(dir + "/pack.json"));

  const std::string bad = TempDir() + "/bad.json";
  WriteFile(bad, R"([{"description": "no name"}])");
  CliRun b = RunCli({"pack", "new", "x", "--tools", bad, "--dir", TempDir() + "/never"});
  CHECK(b.exit_code == 2);
  CHECK_THAT(b.err, Catch::Contains("needs a string \"name\""));
  CHECK_FALSE(std::filesystem::exists(TempDir() + "/never"));

  CliRun n = RunCli({"pack", "new", "bad name", "--tools", tools, "--dir", TempDir() + "/n2"});
  CHECK(n.exit_code == 2);
  CHECK_FALSE(std::filesystem::exists(TempDir() + "/n2"));
}

TEST_CASE("pack lint reports each gap and exits 1") {
  const std::string dir = WriteFlawedPack();
  CliRun r = RunCli({"pack", "lint", dir, "--json"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  const nlohmann::json j = r.LastJson();
  std::set<std::string> found;
  for (const auto& f : j["findings"]) {
    found.insert(f["check"].get<std::string>() + " " + f["subject"].get<std::string>());
  }
  INFO(j.dump(2));
  CHECK(found.count("uncovered_write_tool refund_order") == 1);
  CHECK(found.count("rule_matches_no_tool flawed.ghost") == 1);
  CHECK(found.count("rule_on_read_only_tool flawed.reader") == 1);
  CHECK(found.count("extraction_for_undeclared_tool get_invoice") == 1);
  CHECK(found.count("key_never_extracted fact:order.{?}.owner") == 1);
  CHECK(found.count("key_never_extracted condition:confirmed") == 1);
  // Reads that extract.json does produce, and text in comments, are not findings.
  CHECK(found.count("key_never_extracted fact:order.{?}.status") == 0);
  CHECK(found.count("key_never_extracted fact:in.a.comment") == 0);
  // A variable lint cannot follow stands for any number of segments: the
  // prefix kept in `order` reads order.{id}.status, which is produced, and a
  // misspelt field after it is still found.
  CHECK(found.count("key_never_extracted fact:{?}.status") == 0);
  CHECK(found.count("key_never_extracted fact:{?}.stauts") == 1);
  // ledger.known reads a key and ledger.single a prefix, as verified and keys do.
  CHECK(found.count("key_never_extracted fact:{?}.paid") == 1);
  CHECK(found.count("key_never_extracted identifier:user.auth.") == 1);
  // ledger.fields reads prefix.name for each name: only .gone is new here.
  CHECK(found.count("key_never_extracted fact:{?}.gone") == 1);
  CHECK(j["findings"].size() == 10);

  CliRun text = RunCli({"pack", "lint", dir});
  CHECK(text.exit_code == 1);
  CHECK_THAT(text.out, Catch::Contains("write tool 'refund_order' (pack.json) has no rule"));
  CHECK_THAT(text.out, Catch::Contains("flawed: 10 findings"));
}

TEST_CASE("pack lint: the shipped packs are clean, a pack that does not load is exit 2") {
  for (const char* pack : {"retail", "subscription", "mcp-filesystem"}) {
    CliRun r = RunCli({"pack", "lint", kSource + "/rules/" + pack});
    INFO(pack << "\n" << r.out << r.err);
    CHECK(r.exit_code == 0);
  }
  const std::string dir = TempDir() + "/broken";
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/pack.json", "{not json");
  CliRun r = RunCli({"pack", "lint", dir});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("cannot load rule pack"));
}

TEST_CASE("pack lint checks pack.json's render section") {
  const std::string dir = TempDir() + "/render-lint";
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/pack.json", R"({"name": "r", "tools": {"writes": ["send"]},
    "render": {"internal": ["user.*.dob"], "redact": {"msg.*": ["body"]}}})");
  WriteFile(dir + "/policy.lua",
            "rule { id = 'r.send', tools = {'send'}, check = function() return allow() end }");
  CliRun r = RunCli({"pack", "lint", dir, "--json"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  const nlohmann::json j = r.LastJson();
  REQUIRE(j["findings"].size() == 1);
  CHECK(j["findings"][0]["check"] == "invalid_render_section");
  CHECK_THAT(j["findings"][0]["message"].get<std::string>(),
             Catch::Contains("pointer 'body' must start with '/'"));
  WriteFile(dir + "/pack.json", R"({"name": "r", "tools": {"writes": ["send"]},
    "render": {"internal": ["user.*.dob"], "redact": {"msg.*": ["/body"]}}})");
  CHECK(RunCli({"pack", "lint", dir}).exit_code == 0);
}

TEST_CASE("pack lint reads the keys Lua extractors write") {
  const std::string dir = TempDir() + "/extractor-lint";
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/pack.json", R"({"name": "x", "tools": {
    "read_only": ["list_dir"], "writes": ["delete_file"]}})");
  WriteFile(dir + "/extract.lua", R"(
extractor { id = "x.list", tools = {"list_dir"},
  extract = function(output, call)
    local out = {{category = "fact", key = "fs.listed." .. call.args.path, value = true}}
    for _, name in ipairs(output) do
      out[#out + 1] = {key = std.key("fs", "entry", name), category = "fact", value = "file"}
    end
    return out
  end }
)");
  WriteFile(dir + "/policy.lua", R"(
rule { id = "x.delete", tools = {"delete_file"}, check = function(call, ledger)
  if ledger.fact("fs.entry." .. call.args.path) == nil then return deny("unknown") end
  if ledger.fact("fs.listed." .. call.args.dir) == nil then return deny("unlisted") end
  if ledger.fact("fs.entyr." .. call.args.path) then return deny("typo") end
  if ledger.identifier("fs.entry." .. call.args.path) then return deny("wrong category") end
  return allow()
end }
)");
  CliRun r = RunCli({"pack", "lint", dir, "--json"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  std::set<std::string> found;
  const nlohmann::json j = r.LastJson();
  for (const auto& f : j["findings"]) found.insert(f["subject"].get<std::string>());
  CHECK(found == std::set<std::string>{"fact:fs.entyr.{?}", "identifier:fs.entry.{?}"});

  // An extractor whose key lint cannot read at all may write anything: no key findings.
  WriteFile(dir + "/extract.lua", R"(
extractor { id = "x.list", tools = {"list_dir"},
  extract = function(output, call) return {{category = "fact", key = output.key, value = 1}} end }
)");
  CHECK(RunCli({"pack", "lint", dir}).exit_code == 0);
}
