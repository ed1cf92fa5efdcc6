// The "shop" rule pack (tests/support/shop_pack.h) as a RulePack, built in
// memory for the session and replay tests.
#pragma once

#include <memory>
#include <stdexcept>
#include <vector>

#include "support/shop_pack.h"
#include "taskledger/pack/rule_pack.h"

namespace taskledger::testing {

inline std::shared_ptr<const RulePack> ShopPack() {
  std::vector<PackFile> files;
  for (const auto& [path, text] : ShopPackFiles()) files.push_back({path, text});
  auto pack = RulePack::FromFiles(std::move(files));
  if (!pack.has_value()) throw std::runtime_error(pack.error().ToString());
  return pack.value();
}

}  // namespace taskledger::testing
