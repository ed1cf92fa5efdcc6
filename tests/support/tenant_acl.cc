// The per-tenant ACL the tests use (tenant_acl.h) and the reader of the ACL
// SETUSER blocks in the docs: a fenced code block whose first line starts
// with "ACL SETUSER"; its '+' rules (a trailing backslash continues a line).
#include "support/tenant_acl.h"

#include <sstream>

namespace taskledger::testing {

const std::vector<std::string>& TenantAclCommands() {
  static const std::vector<std::string> commands{
      // issued by the ledger's RedisStore, and inside its tl_commit function
      "ping", "xrange", "xrevrange", "del", "scan", "exists", "xlen", "xadd", "pexpire", "persist",
      // issued by both stores, and by the RedisCommandStore
      "fcall", "function|list", "hget", "hgetall", "sadd", "smembers", "srem", "zrange",
      // issued inside the taskledger_commands functions, under the caller's ACL
      "hset", "hsetnx", "hincrby", "zadd"};
  return commands;
}

std::vector<std::string> TenantAclSetUser(const std::string& tenant, const std::string& password,
                                          const std::vector<std::string>& extra) {
  std::vector<std::string> argv{"ACL",
                                "SETUSER",
                                tenant,
                                "on",
                                ">" + password,
                                "resetkeys",
                                "~tl:{" + tenant + ":*",
                                "~tlc:{" + tenant + ":*",
                                "~tlc:runs:{" + tenant + "}",
                                "resetchannels",
                                "-@all"};
  for (const std::string& command : TenantAclCommands()) argv.push_back("+" + command);
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

std::vector<std::set<std::string>> DocumentedAclCommands(std::string_view markdown) {
  std::vector<std::set<std::string>> blocks;
  std::istringstream in{std::string(markdown)};
  std::string line;
  bool in_fence = false, in_acl = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      in_fence = !in_fence;
      in_acl = false;
      continue;
    }
    if (!in_fence) continue;
    if (!in_acl && line.rfind("ACL SETUSER", 0) == 0) {
      in_acl = true;
      blocks.emplace_back();
    }
    if (!in_acl) continue;
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      if (word.size() > 1 && word[0] == '+') blocks.back().insert(word.substr(1));
    }
  }
  return blocks;
}

}  // namespace taskledger::testing
