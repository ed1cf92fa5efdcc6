// `taskledger policy coverage` (policy_coverage.cc), registered by the
// `policy` verb (policy_verb.cc) as one of its subcommands.
#pragma once

#include <CLI/CLI.hpp>

namespace taskledger::cli {

void AddPolicyCoverage(CLI::App& policy, int& exit_code);

}  // namespace taskledger::cli
