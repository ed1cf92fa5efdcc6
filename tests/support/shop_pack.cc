// The shared "shop" test pack (see shop_pack.h).
#include "support/shop_pack.h"

#include <filesystem>
#include <fstream>

namespace taskledger::testing {
namespace {

void Write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& ShopPackFiles() {
  static const std::vector<std::pair<std::string, std::string>> files = {
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
  return files;
}

std::string WriteShopPack(const std::string& dir) {
  for (const auto& [path, text] : ShopPackFiles()) Write(std::filesystem::path(dir) / path, text);
  Write(std::filesystem::path(dir) / "tests/cancel.json", R"({"cases": [
    {"name": "cancel of a delivered order is denied",
     "events": [
       {"type": "call", "id": "c0", "tool": "get_order", "arguments": {"order_id": "#W1"}},
       {"type": "result", "id": "c0", "output": {"order_id": "#W1", "status": "delivered"}},
       {"type": "user", "text": "yes"}],
     "call": {"tool": "cancel_order", "arguments": {"order_id": "#W1"}},
     "expect": {"decision": "deny", "rule": "shop.pending_only"}},
    {"name": "a confirmed cancel of a pending order is allowed",
     "state": {"facts": {"order.#W2.status": "pending"},
               "conditions": {"confirmation": {"$entry": {"value": {"text": "yes", "action": null},
                                                          "verified": false, "source": "user"}}}},
     "call": {"tool": "cancel_order", "arguments": {"order_id": "#W2"}},
     "expect": {"decision": "allow"}}]})");
  return dir;
}

}  // namespace taskledger::testing
