// A small rule pack for session tests ("shop"): get_order is read-only and
// records the order's status; cancel_order needs a pending order and the
// user's explicit yes. Built in memory so the tests do not move when the
// shipped packs under rules/ evolve.
#pragma once

#include <memory>

#include "taskledger/policy/rule_pack.h"

namespace taskledger::testing {

inline std::shared_ptr<const RulePack> ShopPack() {
  std::vector<PackFile> files = {
      {"pack.json",
       R"({"name": "shop", "tools": {"read_only": ["get_*"], "writes": ["cancel_order"]},
           "unknown_tools": "deny"})"},
      {"extract.json",
       R"({"tools": {"get_order": [
             {"id": "order.status", "path": "/status", "category": "fact",
              "key": "order.{order_id}.status"}]},
           "user": [
             {"id": "user.email", "pattern": "[a-z]+@[a-z]+\\.[a-z]+", "category": "identifier",
              "key": "email"},
             {"id": "user.confirm", "pattern": "^[[:space:]]*(yes|y)[[:space:]!.]*$",
              "confirmation": true, "icase": true}]})"},
      {"shop.lua", R"(
rule {
  id = "shop.pending_only", tools = {"cancel_order"}, priority = 50,
  check = function(call, ledger)
    local s = ledger.fact("order." .. call.args.order_id .. ".status")
    if s == nil then return deny("the status of order " .. call.args.order_id .. " is unknown") end
    if s ~= "pending" then return deny("order " .. call.args.order_id .. " is " .. s) end
    return allow()
  end,
}
rule {
  id = "shop.confirmed", tools = {"cancel_order"}, priority = 10,
  check = function(call, ledger)
    if ledger.confirmed(call) then return allow() end
    return deny("the user has not confirmed this cancellation")
  end,
}
)"}};
  auto pack = RulePack::FromFiles(std::move(files));
  if (!pack.has_value()) throw std::runtime_error(pack.error().ToString());
  return pack.value();
}

}  // namespace taskledger::testing
