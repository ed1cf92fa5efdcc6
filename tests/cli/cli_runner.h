// Helpers for the CLI tests: run the taskledger binary with arguments and
// capture exit code, stdout and stderr; write temporary files; a small rule
// pack ("shop") and traces as files. Tests only; not thread-safe.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace taskledger::testing {

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
  // The last non-empty line of stdout, parsed as JSON (null if it is not JSON).
  nlohmann::json LastJson() const;
};

// Runs TASKLEDGER_CLI with `args` (each shell-quoted).
CliRun RunCli(const std::vector<std::string>& args);

// A fresh temporary directory for this test process (removed at exit).
std::string TempDir();
void WriteFile(const std::string& path, const std::string& text);
std::string ReadFile(const std::string& path);

// Writes the "shop" rule pack (get_order read-only; cancel_order needs a
// pending order and the user's yes) with two passing policy tests into
// `dir` and returns `dir`.
std::string WriteShopPack(const std::string& dir);

// A trace line: lookup, yes, cancel (labeled allow), second cancel (labeled
// deny by shop.confirmed). `conversation` names it.
std::string ShopTraceLine(const std::string& conversation);

}  // namespace taskledger::testing
