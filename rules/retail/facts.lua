-- Look before acting. The other retail rules judge a write on what tool
-- outputs showed in this conversation and deny on evidence only, so that a call
-- is denied for the rule it breaks. This rule, which runs after all of them,
-- denies a write whose facts were not looked up at all: the order it acts on
-- (status, owner, items, payments: get_order_details), the product of each new
-- item (variants and availability: get_product_details), and the payment
-- methods of the user when a payment method is used (get_user_details). An id
-- that no tool output showed (an item that is not in the order, a variant of
-- no product looked up) is made up and denied here too. Pure function of call
-- and ledger.

local shared = require("shared")
local facts, string_list = shared.facts, shared.string_list

-- The arguments each retail write needs before anything can be checked.
local required_arguments = {
  cancel_pending_order = {"order_id", "reason"},
  modify_pending_order_address = {"order_id"},
  modify_pending_order_payment = {"order_id", "payment_method_id"},
  modify_pending_order_items = {"order_id", "item_ids", "new_item_ids", "payment_method_id"},
  return_delivered_order_items = {"order_id", "item_ids", "payment_method_id"},
  exchange_delivered_order_items = {"order_id", "item_ids", "new_item_ids", "payment_method_id"},
  modify_user_address = {"user_id"},
}

-- Arguments that are lists of item ids; an empty table (not allocated per check).
local list_arguments, none = {"item_ids", "new_item_ids"}, {}

-- True if the fact at `key` is live and verified (a tool showed it).
local function known(ledger, key)
  return ledger.fact(key) ~= nil and ledger.verified("fact", key)
end

-- What is missing for the order and its items, or nil.
local function missing_order_facts(call, ledger)
  if call.args.order_id == nil then
    return nil
  end
  local f = facts(ledger)
  local order_id = f.order
  if not f.status_known or not f.owner_known then
    return "look up order " .. order_id .. " with get_order_details (its status, owner, " ..
           "items and payment) before changing it"
  end
  if call.args.item_ids == nil then
    return nil
  end
  local new = string_list(call.args.new_item_ids) or none
  for i, item in ipairs(string_list(call.args.item_ids) or none) do
    if not known(ledger, std.key("order", order_id, "item", item, "price")) then
      return "item " .. item .. " is not an item of order " .. order_id .. ": use the item " ..
             "ids get_order_details lists for the order"
    end
    local variant = new[i]
    local facts = variant ~= nil and std.key("item", variant) or nil
    if facts ~= nil and not (known(ledger, facts .. ".product_id") and
                             known(ledger, facts .. ".available") and
                             known(ledger, facts .. ".price")) then
      return "item " .. variant .. " was not shown by get_product_details: look up product " ..
             tostring(ledger.fact(std.key("item", item, "product_id"))) .. " (the product " ..
             "of item " .. item .. ") and pick one of its variants"
    end
  end
  return nil
end

rule {
  id = "retail.facts_from_tools",
  tools = {"*"},
  priority = 20,
  description = "Before a write, look up with the tools every fact the policy checks for it: "
             .. "the order, the products of new items, the user's payment methods.",
  check = function(call, ledger)
    local args, required = call.args, required_arguments[call.tool] or none
    for i = 1, #required do
      if args[required[i]] == nil then
        return deny(call.tool .. " needs the argument " .. required[i])
      end
    end
    for i = 1, #list_arguments do
      local list = args[list_arguments[i]]
      if list ~= nil and #(string_list(list) or {}) == 0 then
        return deny(list_arguments[i] .. " must be a non-empty list of item ids")
      end
    end
    local missing = missing_order_facts(call, ledger)
    if missing ~= nil then
      return deny(missing)
    end
    local f = facts(ledger)
    local user = call.args.payment_method_id ~= nil and f.user or nil
    if user ~= nil and not f.source_known then
      return deny("look up the payment methods of " .. user .. " with get_user_details and " ..
                  "use one of them")
    end
    return allow()
  end,
}
