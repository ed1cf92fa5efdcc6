// The CLI against a durable store: a replay into Redis read back by another
// process with `audit`, `render` and `metrics`; the audit page (also opened in
// headless Chromium when installed); and the `commands` verbs over commands a
// test puts into the Redis command store.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli/cli_runner.h"
#include "cli/cli_seed.h"
#include "support/redis_server.h"
#include "taskledger/ledger/redis_store.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

std::string Pack() {
  static const std::string dir = WriteShopPack(TempDir() + "/audit-shop");
  return dir;
}

// Replays one shop conversation into Redis under a tenant of its own.
std::string ReplayIntoRedis(const std::string& url, const std::string& tenant) {
  const std::string trace = TempDir() + "/" + tenant + ".jsonl";
  WriteFile(trace, ShopTraceLine("conv-1") + "\n");
  CliRun r = RunCli({"replay", trace, "--rules", Pack(), "--store", url, "--tenant", tenant,
                     "--prefix", "", "--json", "-q"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  return "conv-1";
}

std::string FindChromium() {
  for (const char* p :
       {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return {};
}

// Loads `html` in headless Chromium and returns the DOM it rendered.
std::string RenderedDom(const std::string& chromium, const std::string& html) {
  const std::string profile = TempDir() + "/chromium-profile-" + std::to_string(::getpid());
  std::filesystem::create_directories(profile);
  const std::string out = TempDir() + "/dom.html";
  std::string cmd = "'" + chromium +
                    "' --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
                    "--disable-background-networking --disable-component-update --disable-sync "
                    "--user-data-dir='" +
                    profile + "' --dump-dom 'file://" + html + "' >'" + out + "' 2>/dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  return ReadFile(out);
}

}  // namespace

TEST_CASE("audit reads back a replay from Redis in another process", "[redis]") {
  const std::string url = SharedRedisUrl();
  const std::string tenant = "cli-audit-" + std::to_string(::getpid());
  const std::string conv = ReplayIntoRedis(url, tenant);
  auto with = [&](std::vector<std::string> args) { return RunCliOn(std::move(args), url, tenant); };

  CliRun list = with({"audit", "list", "--json"});
  INFO(list.out << list.err);
  REQUIRE(list.exit_code == 0);
  REQUIRE(list.LastJson()["conversations"].size() == 1);
  // c1 commits twice (its decision before it runs, then its outcome).
  CHECK(list.LastJson()["conversations"][0]["version"] == 4);

  CliRun show = with({"audit", "show", conv, "--version", "1"});
  INFO(show.out << show.err);
  CHECK(show.exit_code == 0);
  CHECK_THAT(show.out, Catch::Contains("order.#W1.status") && Catch::Contains("pending") &&
                           Catch::Contains("get_order#c0"));

  CliRun diff = with({"audit", "diff", conv, "0", "2", "--json"});
  CHECK(diff.exit_code == 0);
  CHECK(diff.LastJson()["changes"][0]["key"] == "order.#W1.status");

  CliRun decisions = with({"audit", "decisions", conv, "--json"});
  REQUIRE(decisions.exit_code == 0);
  nlohmann::json log = decisions.LastJson()["decisions"];
  REQUIRE(log.size() == 3);
  CHECK(log[2]["decision"] == "deny");
  CHECK(log[2]["rule"] == "shop.confirmed");
  CHECK(log[2]["version_seen"] == 3);

  CliRun calls = with({"audit", "calls", conv});
  CHECK(calls.exit_code == 0);
  CHECK_THAT(calls.out, Catch::Contains("c2 cancel_order") && Catch::Contains("-> denied") &&
                            Catch::Contains("decided on v3"));
  // c1 ran: its call record (turn 3) follows the decision written ahead of it (turn 2).
  CHECK_THAT(calls.out, Catch::Contains("turn 3  c1 cancel_order") &&
                            Catch::Contains("-> ok  (decided on v1+"));

  CliRun render = with({"render", conv, "--format", "json", "--version", "1"});
  CHECK(render.exit_code == 0);
  CHECK_THAT(render.out, Catch::Contains("order.#W1.status"));

  // A pack's pack.json "render" keeps marked entries out of the block.
  const std::string pack = TempDir() + "/render-pack";
  std::filesystem::create_directories(pack);
  WriteFile(pack + "/pack.json", R"({"name": "shop", "tools": {"writes": ["cancel_order"]},
    "render": {"internal": ["order.*.status"]}})");
  WriteFile(pack + "/policy.lua", "");
  CliRun hidden = with({"render", conv, "--json", "--version", "1", "--rules", pack});
  INFO(hidden.out << hidden.err);
  CHECK(hidden.exit_code == 0);
  CHECK(hidden.LastJson()["hidden"] == 1);
  CHECK(hidden.LastJson()["text"].get<std::string>().find("order.#W1.status") == std::string::npos);
  WriteFile(pack + "/pack.json", R"({"name": "shop", "tools": {"writes": ["cancel_order"]},
    "render": {"internal": "order.*.status"}})");
  CliRun bad = with({"render", conv, "--version", "1", "--rules", pack});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("internal must be an array"));

  CliRun metrics = with({"metrics"});
  INFO(metrics.out << metrics.err);
  CHECK(metrics.exit_code == 0);
  CHECK_THAT(metrics.out, Catch::Contains("taskledger_decisions_total{tenant=\"" + tenant +
                                          "\",rule=\"shop.confirmed\",outcome=\"deny\"} 1"));
  CHECK_THAT(metrics.out, Catch::Contains("taskledger_check_latency_seconds_count{tenant=\"" +
                                          tenant + "\"} 3"));
  CHECK_THAT(metrics.out, Catch::Contains("taskledger_calls_total{tenant=\"" + tenant +
                                          "\",tool=\"cancel_order\",outcome=\"denied\"} 1"));

  CHECK(with({"audit", "show", "no-such-conversation"}).exit_code == 2);
  CHECK(with({"audit", "show", conv, "--version", "99"}).exit_code == 2);
  CHECK(with({"audit"}).exit_code == 2);

  auto s = OpenStore(url);
  REQUIRE(s.has_value());
  CHECK((*s)->DropConversation({tenant, conv}).ok());
}

TEST_CASE("replay --prefix names a folder of conversations, and the text summary says where",
          "[redis]") {
  const std::string url = SharedRedisUrl();
  const std::string tenant = "cli-prefix-" + std::to_string(::getpid());
  const std::string trace = TempDir() + "/" + tenant + ".jsonl";
  WriteFile(trace, ShopTraceLine("conv-1") + "\n");
  CliRun r = RunCli(
      {"replay", trace, "--rules", Pack(), "--store", url, "--tenant", tenant, "--prefix", "run1"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("stored under: run1\n"));
  // An allow names no single rule: it says how many applicable rules passed.
  CHECK_THAT(r.out, Catch::Contains("-> allow [") && Catch::Contains("passed]"));
  CliRun list = RunCli({"audit", "list", "--json", "--store", url, "--tenant", tenant});
  REQUIRE(list.exit_code == 0);
  REQUIRE(list.LastJson()["conversations"].size() == 1);
  CHECK(list.LastJson()["conversations"][0]["conversation"] == "run1/conv-1");
}

TEST_CASE("the audit page holds a timeline with the blocked call marked", "[redis]") {
  const std::string url = SharedRedisUrl();
  const std::string tenant = "cli-html-" + std::to_string(::getpid());
  ReplayIntoRedis(url, tenant);
  const std::string html = TempDir() + "/audit.html";
  CliRun r = RunCli({"audit", "--html", html, "--store", url, "--tenant", tenant});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string page = ReadFile(html);
  CHECK_THAT(page, Catch::Contains("<ol class=\"timeline\">"));
  CHECK_THAT(page, Catch::Contains("class=\"decision deny blocked\""));
  // One file: no external resources (the one script is inline).
  CHECK_THAT(page, !Catch::Contains("src=") && !Catch::Contains("http://") &&
                       !Catch::Contains("https://") && !Catch::Contains("<link"));

  // The memory store works within one process: replay --audit-html.
  const std::string trace = TempDir() + "/html.jsonl";
  WriteFile(trace, ShopTraceLine("<b>tricky & 'quoted'</b>") + "\n");
  const std::string html2 = TempDir() + "/replay-audit.html";
  CliRun replay = RunCli({"replay", trace, "--rules", Pack(), "--audit-html", html2, "-q"});
  REQUIRE(replay.exit_code == 0);
  const std::string page2 = ReadFile(html2);
  CHECK_THAT(page2, Catch::Contains("&lt;b&gt;tricky &amp; &#39;quoted&#39;&lt;/b&gt;"));
  CHECK_THAT(page2, !Catch::Contains("<b>tricky"));
}

TEST_CASE("the audit page renders offline in headless Chromium", "[redis][chromium]") {
  const std::string chromium = FindChromium();
  if (chromium.empty()) {
    WARN(
        "SKIPPED: chromium is not installed (apt-get install chromium); the page was not opened in "
        "a browser");
    return;
  }
  const std::string trace = TempDir() + "/chromium.jsonl";
  WriteFile(trace, ShopTraceLine("browser-check") + "\n" + ShopTraceLine("second") + "\n");
  const std::string html = TempDir() + "/chromium-audit.html";
  REQUIRE(RunCli({"replay", trace, "--rules", Pack(), "--audit-html", html, "-q"}).exit_code == 0);
  const std::string dom = RenderedDom(chromium, html);
  INFO(dom.substr(0, 2000));
  CHECK_THAT(dom, Catch::Contains("class=\"timeline\""));
  CHECK_THAT(dom, Catch::Contains("class=\"turn has-block\""));
  CHECK_THAT(dom, Catch::Contains("class=\"decision deny blocked\""));
  CHECK_THAT(dom, Catch::Contains("data-rule=\"shop.confirmed\""));
  CHECK_THAT(dom, Catch::Contains("browser-check"));
  // The inline search script ran: it unhides the search box.
  CHECK_THAT(dom, Catch::Contains("id=\"search\"") && !Catch::Contains("hidden=\"\""));
  CHECK_THAT(dom, Catch::Contains("class=\"conversation-row has-block\""));
}

TEST_CASE("the audit page of a replay opens with counts per conversation, the rules and a filter") {
  // "held" has its second cancel denied; "clean" stops after the allowed one.
  std::string clean = ShopTraceLine("clean");
  clean.erase(clean.find(R"(,{"type":"call","id":"c2")"));
  clean += "]}";
  const std::string trace = TempDir() + "/index.jsonl";
  WriteFile(trace, ShopTraceLine("held") + "\n" + clean + "\n");
  const std::string html = TempDir() + "/index-audit.html";
  CliRun r = RunCli({"replay", trace, "--rules", Pack(), "--audit-html", html, "-q"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string page = ReadFile(html);
  CHECK_THAT(page, Catch::Contains("2 conversations, 5 calls, 1 held back"));
  // Index rows: turns, calls, decisions, held back.
  CHECK_THAT(page, Catch::Contains("<tr class=\"conversation-row has-block\" "
                                   "data-target=\"conversation-0\"><td><a "
                                   "href=\"#conversation-0\">held</a></td>"));
  CHECK_THAT(page, Catch::Contains("<td>3</td><td>3</td><td>1</td></tr>"));
  CHECK_THAT(page, Catch::Contains("<tr class=\"conversation-row\" data-target=\"conversation-1\">"
                                   "<td><a href=\"#conversation-1\">clean</a></td>"));
  CHECK_THAT(page, Catch::Contains("<td>2</td><td>2</td><td>0</td></tr>"));
  // The rule table: shop.confirmed ran on all three cancels, held one back and decided it.
  CHECK_THAT(page, Catch::Contains("<tr data-rule=\"shop.confirmed\"><td><code>shop.confirmed"
                                   "</code></td><td>3</td><td>1</td><td>1</td></tr>"));
  // The filter works without scripts: a checkbox whose later siblings CSS hides.
  CHECK_THAT(page, Catch::Contains("<input type=\"checkbox\" id=\"held-only\" class=\"filter\">"));
  CHECK_THAT(page, Catch::Contains(".filter:checked~main section.conversation:not(.has-block)"));
  CHECK_THAT(page,
             Catch::Contains("<section class=\"conversation has-block\" id=\"conversation-0\""));
  CHECK_THAT(page, Catch::Contains("<section class=\"conversation\" id=\"conversation-1\""));
  CHECK_FALSE(std::filesystem::exists(html + ".body.tmp"));
}

TEST_CASE("the audit page shows each decision's evidence chain and the state it saw") {
  // The memory store, within one process: replay --audit-html.
  const std::string trace = TempDir() + "/evidence.jsonl";
  WriteFile(trace, ShopTraceLine("evidence") + "\n");
  const std::string html = TempDir() + "/evidence-audit.html";
  CliRun r = RunCli({"replay", trace, "--rules", Pack(), "--audit-html", html, "-q"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string page = ReadFile(html);
  // c2's denial: the deciding rule's read (the confirmation c1 used up) comes first.
  const size_t denied = page.find("class=\"decision deny blocked\"");
  REQUIRE(denied != std::string::npos);
  const std::string block = page.substr(denied, page.find("</div>", denied) - denied);
  CHECK_THAT(block,
             Catch::Contains("<tr class=\"read deciding\" data-rule=\"shop.confirmed\"><td><code>"
                             "shop.confirmed</code></td><td><code>condition.confirmation</code>"
                             "</td><td class=\"absent\">absent</td>"));
  CHECK(block.find("read deciding") < block.find("data-rule=\"shop.pending_only\""));
  // shop.pending_only's read links to the get_order call whose output wrote it.
  CHECK_THAT(block, Catch::Contains("<code>fact.order.#W1.status</code></td><td><code>"
                                    "&quot;pending&quot;</code></td><td>verified, version 1"));
  CHECK_THAT(block, Catch::Contains("<a href=\"#turn-0-1\">call c0 <code>get_order</code></a>"));
  // The state as it was at that decision, not the conversation's last one.
  CHECK_THAT(block, Catch::Contains("Ledger state at this decision (version 3 + 0 staged)"));
  CHECK_THAT(block, Catch::Contains("order.#W1.status"));
  // An allow names no deciding rule: every applicable rule passed.
  CHECK_THAT(page, Catch::Contains("all 2 applicable rules passed"));
}

TEST_CASE("audit shows uncertain, deduplicated and awaiting-approval calls as such", "[redis]") {
  const std::string url = SharedRedisUrl();
  const std::string tenant = "cli-outcomes-" + std::to_string(::getpid());
  auto store = OpenStore(url);
  REQUIRE(store.has_value());
  const ConversationId id{tenant, "conv-o"};
  TurnRecord t;
  t.turn = 1;
  t.committed_at_ms = 1'700'000'000'000;
  t.calls = {{1, {"w1", "refund", {{"order", "A1"}}}, true, "uncertain"},
             {1, {"w2", "refund", {{"order", "A2"}}}, true, "deduplicated"},
             {1, {"w3", "refund", {{"order", "A3"}}}, true, "awaiting_approval"}};
  LedgerState after;
  REQUIRE(ApplyTurn(after, t).ok());
  REQUIRE((*store)->CommitTurn(id, t, after).ok());
  auto with = [&](std::vector<std::string> args) { return RunCliOn(std::move(args), url, tenant); };
  CliRun calls = with({"audit", "calls", "conv-o"});
  INFO(calls.out << calls.err);
  REQUIRE(calls.exit_code == 0);
  CHECK_THAT(calls.out, Catch::Contains("w1 refund {\"order\":\"A1\"} -> uncertain (the effect "
                                        "may have happened: reconcile it)") &&
                            Catch::Contains("-> deduplicated (already done") &&
                            Catch::Contains("-> awaiting approval (recorded; runs once"));
  CliRun explain = with({"audit", "explain", "conv-o", "w1"});
  CHECK(explain.exit_code == 0);
  CHECK_THAT(explain.out, Catch::Contains("no policy decision was recorded") &&
                              Catch::Contains("-> uncertain (the effect may have happened"));
  const std::string html = TempDir() + "/outcomes.html";
  REQUIRE(with({"audit", "--html", html}).exit_code == 0);
  const std::string page = ReadFile(html);
  CHECK_THAT(page, Catch::Contains("<tr class=\"call uncertain\">") &&
                       Catch::Contains("uncertain (the effect may have happened: reconcile it)") &&
                       Catch::Contains("<tr class=\"call awaiting_approval\">"));
  CHECK((*store)->DropConversation(id).ok());
}

TEST_CASE("commands: list by state, approve with a reason, dry runs change nothing", "[redis]") {
  const std::string url = SharedRedisUrl();
  const std::string tenant = "cli-cmd-" + std::to_string(::getpid());
  const SeededCommand seeded = SeedBlockedRefund(url, tenant);
  const CommandSpec& spec = seeded.spec;
  const std::string& key = seeded.key;
  auto with = [&](std::vector<std::string> args) { return RunCliOn(std::move(args), url, tenant); };

  CliRun blocked = with({"commands", "list", "--state", "blocked", "--json"});
  INFO(blocked.out << blocked.err);
  REQUIRE(blocked.exit_code == 0);
  REQUIRE(blocked.LastJson()["commands"].size() == 1);
  CHECK(
      with({"commands", "list", "--state", "uncertain", "--json"}).LastJson()["commands"].empty());

  CHECK(with({"commands", "approve", "run-1", key}).exit_code == 2);  // --reason is required
  CliRun dry =
      with({"commands", "approve", "run-1", key, "--reason", "checked", "--dry-run", "--json"});
  INFO(dry.out << dry.err);
  CHECK(dry.exit_code == 0);
  CHECK(dry.LastJson()["command"]["state"] == "approved");
  CHECK(seeded.store->Get(spec.run, key)->state == CommandState::kBlocked);

  CliRun approve = with({"commands", "approve", "run-1", key, "--reason", "refund within policy",
                         "--actor", "alice"});
  INFO(approve.out << approve.err);
  CHECK(approve.exit_code == 0);
  auto after = seeded.store->Get(spec.run, key);
  REQUIRE(after.has_value());
  CHECK(after->state == CommandState::kApproved);
  CHECK(after->approver == "alice");
  CHECK(after->approval_reason == "refund within policy");

  // Approving again is a refused transition: exit 1.
  CHECK(with({"commands", "approve", "run-1", key, "--reason", "again"}).exit_code == 1);
  CliRun show = with({"commands", "show", "run-1", key, "--json"});
  CHECK(show.LastJson()["state"] == "approved");
  CHECK(with({"commands", "show", "run-1", "nope"}).exit_code == 2);
  CHECK(seeded.store->DropRun(spec.run).ok());
}

TEST_CASE("audit explain shows the decision, every rule and the evidence chain", "[redis]") {
  const std::string url = SharedRedisUrl();
  const std::string tenant = "cli-explain-" + std::to_string(::getpid());
  const std::string conv = ReplayIntoRedis(url, tenant);
  auto with = [&](std::vector<std::string> args) { return RunCliOn(std::move(args), url, tenant); };

  // c1 was allowed: both rules passed; shop.pending_only read the order's
  // status, which came from the get_order call c0 (output path /status).
  CliRun allowed = with({"audit", "explain", conv, "c1", "--rules", Pack(), "--json"});
  INFO(allowed.out << allowed.err);
  REQUIRE(allowed.exit_code == 0);
  nlohmann::json j = allowed.LastJson();
  REQUIRE(j["decisions"].size() == 1);
  const nlohmann::json& d = j["decisions"][0];
  CHECK(d["decision"] == "allow");
  REQUIRE(d["evidence"].size() == 2);
  const nlohmann::json& pending = d["evidence"][0];
  CHECK(pending["rule"] == "shop.pending_only");
  REQUIRE(pending["reads"].size() == 1);
  const nlohmann::json& status = pending["reads"][0];
  CHECK(status["key"] == "order.#W1.status");
  CHECK(status["value"] == "pending");
  CHECK(status["value_matches"] == true);
  CHECK(status["verified"] == true);
  CHECK(status["source_id"] == "get_order#c0");
  CHECK(status["call"]["id"] == "c0");
  CHECK(status["call"]["tool"] == "get_order");
  CHECK(status["call"]["arguments"]["order_id"] == "#W1");
  CHECK(status["extraction"]["path"] == "/status");
  // shop.confirmed read the user's yes: a claim from the user message.
  const nlohmann::json& yes = d["evidence"][1]["reads"][0];
  CHECK(yes["key"] == "confirmation");
  CHECK(yes["present"] == true);
  CHECK(yes["source"] == "user");
  CHECK(yes["verified"] == false);
  CHECK(j["calls"][0]["outcome"] == "ok");

  // c2 was denied by shop.confirmed: the confirmation it read was gone (c1 used it).
  CliRun denied = with({"audit", "explain", conv, "c2"});
  INFO(denied.out << denied.err);
  REQUIRE(denied.exit_code == 0);
  CHECK_THAT(denied.out, Catch::Contains("deny [shop.confirmed]") &&
                             Catch::Contains("rules evaluated (2)") &&
                             Catch::Contains("* shop.confirmed: deny") &&
                             Catch::Contains("shop.confirmed (deciding) read:") &&
                             Catch::Contains("condition confirmation: absent") &&
                             Catch::Contains("fact order.#W1.status = \"pending\"  verified") &&
                             Catch::Contains("<- call c0 get_order {\"order_id\":\"#W1\"} -> ok") &&
                             Catch::Contains("-> denied (not run)"));
  // The deciding rule's chain comes before the other rules'.
  CHECK(denied.out.find("shop.confirmed (deciding) read") <
        denied.out.find("shop.pending_only read:"));

  CliRun text = with({"audit", "explain", conv, "c1", "--rules", Pack()});
  CHECK_THAT(text.out, Catch::Contains("allow (all 2 applicable rules passed)") &&
                           Catch::Contains("output /status") &&
                           Catch::Contains("extraction rule order.status"));

  CHECK(with({"audit", "explain", conv, "no-such-call"}).exit_code == 2);
  CHECK(with({"audit", "explain", "no-such-conversation", "c1"}).exit_code == 2);
  CHECK(with({"audit", "explain", conv, "c1", "--rules", "/nonexistent"}).exit_code == 2);

  auto s = OpenStore(url);
  REQUIRE(s.has_value());
  CHECK((*s)->DropConversation({tenant, conv}).ok());
}
