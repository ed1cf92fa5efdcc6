// Tenant isolation against a real redis-server: a session of one tenant can
// neither read nor change another tenant's conversations, whatever bytes the
// ids contain (hash-tag and separator injection, glob characters, newlines),
// and per-tenant Redis ACL users confine each tenant's process to its own key
// prefix (docs/reliability.md, "Tenant isolation").
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "reliability/workload.h"
#include "support/redis_server.h"
#include "support/tenant_acl.h"
#include "taskledger/commands/command_ledger.h"
#include "taskledger/commands/redis_command_store.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// Ids aimed at {"victim", "c1"}: pieces of its key (tl:{victim:c1}:turns), tag
// breakers, separators, glob characters and control bytes.
const std::vector<ConversationId> kCraftedIds = {
    {"victim:c1", "-"},
    {"victim", "c1}"},
    {"victim}", "c1"},
    {"victim:c1}", "x"},
    {"{victim", "c1"},
    {"victim", "{c1}"},
    {"victim*", "c1"},
    {"vic*", "*"},
    {"*", "*"},
    {"victim\n", "c1"},
    {"victim", "c1\n"},
    {"victim", "c1\r\n"},
    {"victim%3Ac1", "-"},
    {"victim", "c1}:turns"},
    {"a}:x", "c1"},
    {"victim?", "c1"},
    {"victim[", "c1]"},
    {"victim\\", "c1"},
    {"", "victim:c1"},
    {"victim", std::string("c1\0x", 4)},
    {"mallory", "victim:c1"},
    {"mallory", "}:{victim:c1"},
    {"mallory", "*"},
    {"mallory", "../victim/c1"},
};

// Commits two workload turns for `id` through a Session; returns the head state.
LedgerState WriteTwoTurns(Store& store, const ConversationId& id) {
  auto session = Session::Open(store, id, RetailPack());
  REQUIRE(session.has_value());
  for (uint64_t k = 1; k <= 2; ++k) {
    REQUIRE(StageWorkloadTurn(*session.value(), k).ok());
    auto v = session.value()->EndTurn();
    INFO(v.status().ToString());
    REQUIRE(v.has_value());
    REQUIRE(v.value() == k);
  }
  return session.value()->ledger().head();
}

}  // namespace

TEST_CASE("tenant isolation: crafted ids never reach another tenant's conversation",
          "[reliability][tenant]") {
  auto server = RedisServer::Start();
  auto store = MustOpenStore(server->url());
  const ConversationId victim{"victim", "c1"};
  const LedgerState victim_state = WriteTwoTurns(*store, victim);

  for (const ConversationId& id : kCraftedIds) {
    INFO("tenant='" << id.tenant << "' conversation='" << id.conversation << "'");
    auto session = Session::Open(*store, id, RetailPack());
    REQUIRE(session.has_value());
    // Nothing of the victim is visible: the crafted id starts empty ...
    CHECK(session.value()->ledger().version() == 0);
    CHECK(session.value()->ledger().head().size() == 0);
    // ... and writing under it, then dropping it, leaves the victim untouched.
    REQUIRE(StageWorkloadTurn(*session.value(), 7).ok());
    REQUIRE(session.value()->EndTurn().value() == 1);
    auto listed = store->ListConversations(id.tenant);
    REQUIRE(listed.has_value());
    CHECK(std::find(listed.value().begin(), listed.value().end(), id.conversation) !=
          listed.value().end());
    CHECK(store->Head(victim).value() == 2);
    REQUIRE(store->DropConversation(id).ok());
    CHECK(store->Head(victim).value() == 2);
  }
  auto after = store->ReadHead(victim);
  REQUIRE(after.has_value());
  CHECK(after.value() == victim_state);
  CHECK(store->ListConversations("victim").value() == std::vector<std::string>{"c1"});
  // Glob characters in a tenant list only that tenant's own conversations.
  for (const std::string tenant : {"*", "vic*", "victim?", "victim[", "?ictim", ""}) {
    INFO("tenant='" << tenant << "'");
    CHECK(store->ListConversations(tenant).value().empty());
  }
}

TEST_CASE("tenant isolation: a Ledger reading history reads only its own conversation",
          "[reliability][tenant]") {
  auto server = RedisServer::Start();
  auto store = MustOpenStore(server->url());
  WriteTwoTurns(*store, {"victim", "c1"});
  auto attacker = Ledger::Open(*store, {"victim}", "c1"});
  REQUIRE(attacker.has_value());
  CHECK(attacker.value()->version() == 0);
  auto past = attacker.value()->At(1);
  REQUIRE_FALSE(past.has_value());
  CHECK(past.error().code() == StatusCode::kNotFound);
  CHECK(store->ReadTurns({"victim}", "c1"}, 1, 2).error().code() == StatusCode::kNotFound);
}

namespace {

std::string UrlFor(const RedisServer& server, const std::string& user,
                   const std::string& password) {
  return "redis://" + user + ":" + password + "@127.0.0.1:" + std::to_string(server.port());
}

// Runs redis-cli as `user`; its output (replies and errors).
std::string RedisCliAs(const RedisServer& server, const std::string& user,
                       const std::string& password, const std::string& args) {
  std::string cmd = "redis-cli -p " + std::to_string(server.port()) + " --user " + user +
                    " --pass " + password + " --no-auth-warning " + args + " 2>&1";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    pclose(p);
  }
  return out;
}

CommandSpec Refund(const std::string& tenant, const std::string& step, int amount) {
  CommandSpec spec;
  spec.run = RunId{tenant, "r1"};
  spec.step = step;
  spec.call.tool = "refund";
  spec.target = "order:A1";
  spec.call.arguments = {{"amount", amount}};
  return spec;
}

ToolBinding RefundService() {
  return ToolBinding{[](const Command& c) {
                       return ToolOutcome::Succeeded("ext-" + c.target, {{"ok", true}});
                     },
                     [](const Command&) { return LookupResult::NotFound(); }};
}

}  // namespace

TEST_CASE("tenant isolation: per-tenant ACL users confine each process to its own keys",
          "[reliability][tenant][acl]") {
  auto server = RedisServer::Start();
  // The operator's connections load both function libraries once.
  auto admin = MustOpenStore(server->url());
  auto admin_commands =
      OpenRedisCommandStore(RedisOpts(server->url(), std::chrono::milliseconds(1000)));
  REQUIRE(admin_commands.has_value());
  REQUIRE(server->Run(TenantAclSetUser("victim", "pw-v")) == "OK");
  REQUIRE(server->Run(TenantAclSetUser("mallory", "pw-m")) == "OK");

  // The victim's process works fully under its ACL: sessions and commands.
  auto victim_store = MustOpenStore(UrlFor(*server, "victim", "pw-v"));
  const LedgerState victim_state = WriteTwoTurns(*victim_store, {"victim", "c1"});
  CHECK(victim_store->ListConversations("victim").value() == std::vector<std::string>{"c1"});
  auto victim_commands = OpenRedisCommandStore(
      RedisOpts(UrlFor(*server, "victim", "pw-v"), std::chrono::milliseconds(1000)));
  REQUIRE(victim_commands.has_value());
  ManualClock clock;
  CommandLedger victim_ledger(*victim_commands.value(), clock);
  victim_ledger.Bind("refund", RefundService());
  auto ran = victim_ledger.Run(Refund("victim", "refund-1", 5));
  REQUIRE(ran.has_value());
  CHECK(ran.value().state == CommandState::kSucceeded);

  // Mallory's process, with its own ACL, reaches none of it.
  const std::string mallory_url = UrlFor(*server, "mallory", "pw-m");
  auto mallory_store = MustOpenStore(mallory_url);
  auto denied = Session::Open(*mallory_store, {"victim", "c1"}, RetailPack());
  REQUIRE_FALSE(denied.has_value());
  CHECK(denied.error().code() == StatusCode::kFailedPrecondition);
  CHECK(denied.error().message().find("NOPERM") != std::string::npos);
  CHECK(mallory_store->DropConversation({"victim", "c1"}).code() ==
        StatusCode::kFailedPrecondition);
  CHECK(mallory_store->ReadTurns({"victim", "c1"}, 1, 2).error().code() ==
        StatusCode::kFailedPrecondition);
  for (const ConversationId& id : kCraftedIds) {
    INFO("tenant='" << id.tenant << "' conversation='" << id.conversation << "'");
    auto session = Session::Open(*mallory_store, id, RetailPack());
    if (id.tenant != "mallory") {
      REQUIRE_FALSE(session.has_value());
      CHECK(session.error().code() == StatusCode::kFailedPrecondition);
      continue;
    }
    REQUIRE(session.has_value());
    CHECK(session.value()->ledger().version() == 0);
    REQUIRE(StageWorkloadTurn(*session.value(), 1).ok());
    CHECK(session.value()->EndTurn().has_value());
  }
  // The names of the victim's conversations are not readable either.
  auto listed = mallory_store->ListConversations("victim");
  CHECK((!listed.has_value() || listed.value().empty()));

  auto mallory_commands =
      OpenRedisCommandStore(RedisOpts(mallory_url, std::chrono::milliseconds(1000)));
  REQUIRE(mallory_commands.has_value());
  CHECK(mallory_commands.value()
            ->Get(RunId{"victim", "r1"}, ran.value().command_key)
            .error()
            .code() == StatusCode::kFailedPrecondition);
  CHECK(mallory_commands.value()->ListRuns("victim").error().code() ==
        StatusCode::kFailedPrecondition);
  CommandLedger mallory_ledger(*mallory_commands.value(), clock);
  mallory_ledger.Bind("refund", RefundService());
  CHECK(mallory_ledger.Run(Refund("victim", "refund-2", 500)).error().code() ==
        StatusCode::kFailedPrecondition);

  // Nor can a tenant replace the shared function library, which runs under
  // every other tenant's identity.
  CHECK(RedisCliAs(*server, "mallory", "pw-m", "FUNCTION LOAD REPLACE \"#!lua name=taskledger\"")
            .find("NOPERM") != std::string::npos);
  CHECK(RedisCliAs(*server, "mallory", "pw-m", "FUNCTION FLUSH").find("NOPERM") !=
        std::string::npos);

  // The victim's data is exactly as it left it.
  CHECK(admin->ReadHead({"victim", "c1"}).value() == victim_state);
  CHECK(admin_commands.value()->ListCommands(RunId{"victim", "r1"}).value().size() == 1);
}

TEST_CASE(
    "tenant isolation: a tenant process that meets another library version says who must load it",
    "[reliability][tenant][acl]") {
  auto server = RedisServer::Start();
  REQUIRE(server->Run(TenantAclSetUser("victim", "pw-v")) == "OK");
  const std::string victim_url = UrlFor(*server, "victim", "pw-v");
  // The server holds another version of the ledger's library (as after an
  // upgrade of the application), which the tenant user may not replace.
  REQUIRE(server->Run({"FUNCTION", "LOAD",
                       "#!lua name=taskledger_ledger\n"
                       "redis.register_function('tl_commit', function() return 0 end)"}) ==
          "taskledger_ledger");
  auto refused = OpenRedisStore(RedisOpts(victim_url, std::chrono::milliseconds(1000)));
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code() == StatusCode::kFailedPrecondition);
  const std::string& why = refused.error().message();
  CHECK(why.find("NOPERM") != std::string::npos);
  CHECK(why.find("taskledger_ledger") != std::string::npos);
  CHECK(why.find("as a user allowed FUNCTION LOAD") != std::string::npos);
  // Once an operator's connection has loaded this build's library, the
  // tenant's process opens and works.
  auto admin = MustOpenStore(server->url());
  auto opened = OpenRedisStore(RedisOpts(victim_url, std::chrono::milliseconds(1000)));
  REQUIRE(opened.has_value());
  const LedgerState written = WriteTwoTurns(*opened.value(), {"victim", "c1"});
  CHECK(admin->ReadHead({"victim", "c1"}).value() == written);
}
