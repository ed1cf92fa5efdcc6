// The commands our Redis Functions run must be ones the documented per-tenant
// ACL allows: Redis checks every redis.call inside a function against the
// caller's ACL, so a function that calls a command the ACL lacks (a change
// that read fields with HMGET did) breaks every transition of every tenant
// user, while an admin-run test suite stays green. Here the function
// libraries' Lua texts (taskledger_ledger and taskledger_commands) are
// scanned for redis.call / redis.pcall, each command is checked against the
// ACL of tests/support/tenant_acl.h, and a real redis-server is asked (ACL
// DRYRUN) whether a user given exactly that ACL may run it on the tenant's
// keys. The docs (redis-keys.md, reliability.md) must spell the same ACL.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "internal/command_redis_functions.h"
#include "internal/ledger_redis_function.h"
#include "support/redis_server.h"
#include "support/tenant_acl.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

// What a Lua text calls: the lower-cased command names given as string
// literals to redis.call / redis.pcall (or server.*), and every call whose
// first argument is not a literal (its text up to the next ')'), which this
// check cannot judge and so refuses. Comments ("--" to the end of a line)
// are skipped.
struct Calls {
  std::set<std::string> commands;
  std::vector<std::string> not_literal;
};

Calls CalledCommands(std::string_view lua) {
  Calls out;
  std::istringstream in{std::string(lua)};
  std::string line;
  while (std::getline(in, line)) {
    if (size_t comment = line.find("--"); comment != std::string::npos) line.resize(comment);
    for (std::string_view owner : {"redis.", "server."}) {
      for (size_t at = line.find(owner); at != std::string::npos;
           at = line.find(owner, at + owner.size())) {
        if (at > 0 &&
            (std::isalnum(static_cast<unsigned char>(line[at - 1])) != 0 || line[at - 1] == '_')) {
          continue;  // part of another name
        }
        size_t name = at + owner.size();
        size_t verb = line.compare(name, 5, "pcall") == 0  ? 5
                      : line.compare(name, 4, "call") == 0 ? 4
                                                           : 0;
        if (verb == 0) continue;  // redis.register_function, redis.log, ...
        size_t open = line.find_first_not_of(' ', name + verb);
        if (open == std::string::npos || line[open] != '(') continue;
        size_t arg = line.find_first_not_of(' ', open + 1);
        char quote = arg == std::string::npos ? '\0' : line[arg];
        size_t close = (quote == '\'' || quote == '"') ? line.find(quote, arg + 1) : arg;
        if ((quote != '\'' && quote != '"') || close == std::string::npos) {
          out.not_literal.push_back(line.substr(at, line.find(')', at) - at + 1));
          continue;
        }
        std::string command = line.substr(arg + 1, close - arg - 1);
        std::transform(command.begin(), command.end(), command.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        out.commands.insert(command);
      }
    }
  }
  return out;
}

Calls LibraryCalls() {
  Calls ledger = CalledCommands(internal::LedgerFunctionLibrary().source);
  Calls commands = CalledCommands(internal::CommandFunctionLibrary().source);
  ledger.commands.insert(commands.commands.begin(), commands.commands.end());
  ledger.not_literal.insert(ledger.not_literal.end(), commands.not_literal.begin(),
                            commands.not_literal.end());
  return ledger;
}

std::string ReadDoc(const std::string& relative) {
  std::ifstream in(std::string(TASKLEDGER_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("function ACL: the scan finds a command the ACL lacks, and a call it cannot judge",
          "[reliability][acl]") {
  // The shape of last session's breaking change: a transition reading its
  // fields with HMGET. The scan must see it, and the ACL must not have it.
  Calls calls = CalledCommands(
      "local state = redis.call('HMGET', KEYS[1], 'state', 'owner') -- redis.call('DEL')\n"
      "local ok = redis.pcall(\"XADD\", KEYS[2], '0-1', 't', ARGV[1])\n"
      "local name = 'HGET'; return redis.call(name, KEYS[1], 'f')\n");
  CHECK(calls.commands == std::set<std::string>{"hmget", "xadd"});
  REQUIRE(calls.not_literal.size() == 1);
  CHECK(calls.not_literal[0] == "redis.call(name, KEYS[1], 'f')");
  const auto& acl = TenantAclCommands();
  CHECK(std::find(acl.begin(), acl.end(), "hmget") == acl.end());
}

TEST_CASE("function ACL: every command the function libraries run is in the tenant ACL",
          "[reliability][acl]") {
  Calls calls = LibraryCalls();
  // The libraries write with XADD (tl_commit) and HSET (every transition): a
  // scan that found neither would be checking nothing.
  REQUIRE(calls.commands.count("xadd") == 1);
  REQUIRE(calls.commands.count("hset") == 1);
  for (const std::string& call : calls.not_literal) {
    FAIL_CHECK("a call whose command is not a literal, so unchecked: " << call);
  }
  const auto& acl = TenantAclCommands();
  for (const std::string& command : calls.commands) {
    INFO("a function library calls '" << command
                                      << "', which the per-tenant ACL of docs/redis-keys.md and "
                                         "docs/reliability.md (tests/support/tenant_acl.h) lacks");
    CHECK(std::find(acl.begin(), acl.end(), command) != acl.end());
  }
}

TEST_CASE("function ACL: a real server lets the documented tenant user run every function command",
          "[reliability][acl][redis]") {
  auto server = RedisServer::Start();
  REQUIRE(server->Run(TenantAclSetUser("acme", "pw-acme")) == "OK");
  for (const std::string& command : LibraryCalls().commands) {
    for (const std::string key : {"tl:{acme:c1}:turns", "tlc:{acme:r1}:cmd:k"}) {
      // ACL DRYRUN checks arity too: give the command 1..6 arguments until
      // the server judges the permission rather than the argument count.
      std::string verdict;
      std::vector<std::string> argv{"ACL", "DRYRUN", "acme", command, key};
      for (int extra = 0; extra < 6; ++extra, argv.push_back("1")) {
        verdict = server->Run(argv);
        if (verdict.find("wrong number of arguments") == std::string::npos) break;
      }
      INFO("ACL DRYRUN acme " << command << " " << key << " -> " << verdict);
      CHECK(verdict == "OK");
    }
  }
  // The check can refuse: a command outside the ACL, and another tenant's key.
  CHECK(server->Run({"ACL", "DRYRUN", "acme", "HMGET", "tl:{acme:c1}:turns", "f"}) != "OK");
  CHECK(server->Run({"ACL", "DRYRUN", "acme", "HGET", "tlc:{bob:r1}:cmd:k", "f"}) != "OK");
}

TEST_CASE("function ACL: the docs spell the ACL the tests give tenant users",
          "[reliability][acl]") {
  const auto& commands = TenantAclCommands();
  const std::set<std::string> expected(commands.begin(), commands.end());
  for (const std::string doc : {"docs/redis-keys.md", "docs/reliability.md"}) {
    auto blocks = DocumentedAclCommands(ReadDoc(doc));
    INFO(doc);
    REQUIRE(blocks.size() == 1);
    CHECK(blocks[0] == expected);
  }
}
