// The verbs of the taskledger CLI. Each Add*Verb registers one subcommand on
// the app; its callback runs the verb and writes the process exit code
// (cli_common.h: 0 ok, 1 a check failed, 2 usage or input error) to `exit_code`.
#pragma once

#include <CLI/CLI.hpp>

namespace taskledger::cli {

void AddReplayVerb(CLI::App& app, int& exit_code);
void AddAuditVerb(CLI::App& app, int& exit_code);
void AddCommandsVerb(CLI::App& app, int& exit_code);
void AddPolicyVerb(CLI::App& app, int& exit_code);
void AddRenderVerb(CLI::App& app, int& exit_code);
void AddMetricsVerb(CLI::App& app, int& exit_code);
void AddMcpProxyVerb(CLI::App& app, int& exit_code);
void AddPackVerb(CLI::App& app, int& exit_code);
void AddServeVerb(CLI::App& app, int& exit_code);

}  // namespace taskledger::cli
