// Rule-pack fixtures for the fuzz targets that run extraction or policy:
// the packs of rules/ in the source tree, loaded once. A fixture that does
// not load aborts with the reason (it is a broken build, not a finding).
// Single-threaded, like libFuzzer.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "taskledger/pack/rule_pack.h"

namespace taskledger::fuzz {

// The files of rules/<name>/ from the source tree. A fixture the targets
// cannot run without: abort with the reason if it does not load.
inline std::vector<PackFile> SourcePackFiles(const char* name) {
  auto pack = RulePack::Load(std::string(TASKLEDGER_SOURCE_DIR) + "/rules/" + name);
  if (!pack.has_value()) {
    std::fprintf(stderr, "fuzz: cannot load rules/%s: %s\n", name, pack.error().ToString().c_str());
    std::abort();
  }
  return pack.value()->files();
}

// Loads a pack from files or aborts: for fixtures only, never for fuzz input.
inline std::shared_ptr<const RulePack> FixturePack(std::vector<PackFile> files) {
  auto pack = RulePack::FromFiles(std::move(files));
  if (!pack.has_value()) {
    std::fprintf(stderr, "fuzz: fixture pack does not load: %s\n", pack.error().ToString().c_str());
    std::abort();
  }
  return pack.value();
}

}  // namespace taskledger::fuzz
