// Helpers for the CLI tests: run the taskledger binary with arguments and
// capture exit code, stdout and stderr; write temporary files; traces of the
// "shop" pack (tests/support/shop_pack.h) as files. Tests only; not
// thread-safe.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/shop_pack.h"  // WriteShopPack

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

// A trace line: lookup, yes, cancel (labeled allow), second cancel (labeled
// deny by shop.confirmed). `conversation` names it.
std::string ShopTraceLine(const std::string& conversation);

}  // namespace taskledger::testing
