// The rule pack the MCP proxy tests gate the fake server (fake_mcp_server.cc)
// with: read-only echo/spam, writes touch/publish/refuse/crash/hang, rule
// fake.no_forbidden denies a touch of a path containing "forbidden",
// fake.needs_approval holds every publish (a touch too) for an operator; the
// fact "secret" (echo's /echo/secret) is internal and echoed's /card is
// redacted in the rendered state (pack.json "render"). Both
// in memory (FakePack) and as a folder the taskledger binary can load
// (WriteFakePack). Tests only.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "taskledger/pack/rule_pack.h"

namespace taskledger::testing {

inline std::vector<PackFile> FakePackFiles() {
  return {{"pack.json", R"({"name": "fake", "tools": {"read_only": ["echo", "spam"],
                      "writes": ["touch", "publish", "refuse", "crash", "hang"]}, "unknown_tools": "deny",
                      "render": {"internal": ["secret"], "redact": {"echoed": ["/card"]}}})"},
          {"extract.json", R"({"tools": {"echo": [{"id": "echo.value", "path": "/echo/value",
                          "category": "fact", "key": "echoed"},
                          {"id": "echo.secret", "path": "/echo/secret",
                          "category": "fact", "key": "secret"}]}})"},
          {"policy.lua", R"(
rule {
  id = "fake.no_forbidden",
  tools = {"touch"},
  check = function(call, ledger)
    if string.find(call.args.path or "", "forbidden", 1, true) then
      return deny("paths containing 'forbidden' are off limits")
    end
    return allow()
  end,
}
rule {
  id = "fake.needs_approval",
  tools = {"publish"},
  check = function(call, ledger)
    return require_approval("publishing needs an operator")
  end,
})"}};
}

inline std::shared_ptr<const RulePack> FakePack() {
  auto pack = RulePack::FromFiles(FakePackFiles());
  REQUIRE(pack.has_value());
  return std::move(pack).value();
}

// Writes the pack's files into `dir` (created if missing).
inline void WriteFakePack(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  for (const PackFile& file : FakePackFiles()) {
    std::ofstream out(dir / file.path);
    out << file.contents;
    REQUIRE(out.good());
  }
}

}  // namespace taskledger::testing
