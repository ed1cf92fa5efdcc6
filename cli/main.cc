// taskledger: the command-line tool. A thin main: it registers the verbs
// (cli/src/<verb>.cc), parses the command line, and returns the verb's exit
// code: 0 ok, 1 a check failed, 2 usage or input error. No exception escapes.
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli_common.h"
#include "verbs.h"

int main(int argc, char** argv) {
  using namespace taskledger::cli;
  CLI::App app{"taskledger: task state, a policy gate and crash-safe tool calls for agents"};
  app.set_version_flag("--version", "taskledger " TASKLEDGER_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);
  int exit_code = kExitOk;
  AddReplayVerb(app, exit_code);
  AddPolicyVerb(app, exit_code);
  AddAuditVerb(app, exit_code);
  AddRenderVerb(app, exit_code);
  AddMetricsVerb(app, exit_code);
  AddCommandsVerb(app, exit_code);
  AddMcpProxyVerb(app, exit_code);
  AddPackVerb(app, exit_code);
  AddServeVerb(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with exit code 0 in CLI11.
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "taskledger: internal error: " << e.what() << "\n";
    return kExitUsage;
  }
  return exit_code;
}
