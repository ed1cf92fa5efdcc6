// The least-privilege per-tenant Redis ACL that docs/redis-keys.md ("Per-tenant
// ACL") and docs/reliability.md document, in one place for the tests: the
// tenant-isolation tests give a user exactly these rules, and
// tests/reliability/function_acl_test.cc checks that the docs spell the same
// commands and that every command our Redis Functions run is among them
// (Redis checks commands run inside a function against the caller's ACL, so
// a function calling anything else fails for every tenant user).
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace taskledger::testing {

// The commands a tenant's user is allowed, lower case, as ACL rules name
// them without the '+' ("hget", "function|list"), in the documented order.
const std::vector<std::string>& TenantAclCommands();

// ACL SETUSER <tenant> for a single server: the tenant's key prefixes only
// and TenantAclCommands(), then `extra` rules (a cluster's router adds
// "+cluster|slots" and "+asking").
std::vector<std::string> TenantAclSetUser(const std::string& tenant, const std::string& password,
                                          const std::vector<std::string>& extra = {});

// The commands (lower case, without '+') that the ACL SETUSER code blocks of a
// Markdown document allow; one set per block, in document order.
std::vector<std::set<std::string>> DocumentedAclCommands(std::string_view markdown);

}  // namespace taskledger::testing
