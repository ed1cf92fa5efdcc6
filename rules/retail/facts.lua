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

local rule_of, string_list, none = require("shared").rule, require("shared").string_list, {}

-- The arguments each retail write needs before anything can be checked.
local required_arguments = {
  cancel_pending_order = {"order_id", "reason"}, modify_user_address = {"user_id"},
  modify_pending_order_address = {"order_id"},
  modify_pending_order_payment = {"order_id", "payment_method_id"},
  modify_pending_order_items = {"order_id", "item_ids", "new_item_ids", "payment_method_id"},
  return_delivered_order_items = {"order_id", "item_ids", "payment_method_id"},
  exchange_delivered_order_items = {"order_id", "item_ids", "new_item_ids", "payment_method_id"},
}

-- What is missing for the items of order `order_id`, or nil: each old item must be
-- one of the order's, each new one a variant get_product_details showed.
local function missing_items(ledger, order_id, args)
  local old, new = string_list(args.item_ids) or none, string_list(args.new_item_ids) or none
  for i, item in ipairs(order_id ~= nil and old or none) do  -- no order: nothing to look in
    if not ledger.verified("fact", std.key("order", order_id, "item", item, "price")) then
      return "item " .. item .. " is not an item of order " .. order_id .. ": use the item ids "
        .. "get_order_details lists for the order"
    elseif new[i] ~= nil and not (ledger.verified("fact", std.key("item", new[i], "product_id"))
        and ledger.verified("fact", std.key("item", new[i], "available"))
        and ledger.verified("fact", std.key("item", new[i], "price"))) then
      return "item " .. new[i] .. " was not shown by get_product_details: look up product "
        .. tostring(ledger.fact(std.key("item", item, "product_id"))) .. " (the product of item "
        .. item .. ") and pick one of its variants"
    end
  end
end

rule_of("retail.facts_from_tools", {"*"}, 20,
  "Before a write, look up every fact it is checked on: order, new items, payment methods.",
  function(call, ledger, f)
    local args = call.args
    local required = required_arguments[call.tool] or none
    for i = 1, #required do  -- numeric loops: ipairs is a C call per step
      if args[required[i]] == nil then return call.tool .. " needs the argument " .. required[i] end
    end
    local item_ids, new_item_ids = args.item_ids, args.new_item_ids
    if item_ids ~= nil and #(string_list(item_ids) or none) == 0 then
      return "item_ids must be a non-empty list of item ids"
    elseif new_item_ids ~= nil and #(string_list(new_item_ids) or none) == 0 then
      return "new_item_ids must be a non-empty list of item ids"
    end
    if f.order ~= nil and not (f.status_known and f.owner_known) then
      return "look up order " .. f.order .. " with get_order_details (its status, owner, items "
        .. "and payment) before changing it"
    end
    if args.payment_method_id ~= nil and f.user ~= nil and not f.source_known then
      return missing_items(ledger, f.order, args) or "look up the payment methods of " .. f.user
        .. " with get_user_details and use one of them"
    end
    -- Without items there is nothing to look up: no call (the common case).
    if item_ids ~= nil and f.order ~= nil then return missing_items(ledger, f.order, args) end
  end)
