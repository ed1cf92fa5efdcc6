-- Order status preconditions. Each write acts on an order in one status:
-- cancel and modify need 'pending', return and exchange need 'delivered'. The
-- status is the one the agent last saw in a tool output (get_order_details or
-- the order a write returned), so a write earlier in the conversation that
-- changed it (a cancellation, a return) is taken into account. Modifying items
-- is a one-time action: afterwards the order is 'pending (item modified)' and
-- can no longer be modified or cancelled. A status no tool has shown yet is
-- left to retail.facts_from_tools (see identity.lua). Pure functions of call
-- and ledger.

local facts = require("shared").facts

-- What can be done instead with an order in `status`, for the deny reason.
local alternatives = {
  ["pending"] = "; a pending order can be cancelled or modified instead",
  ["delivered"] = "; a delivered order can be returned or exchanged instead",
}

-- True once the order's items were modified: its status says so, or this
-- conversation already ran modify_pending_order_items on it.
local function items_modified(ledger, order_id)
  if order_id == nil or ledger.calls("modify_pending_order_items", "order_id", order_id) > 0 then
    return order_id ~= nil
  end
  local status = facts(ledger).status
  return status ~= "pending" and string.find(tostring(status), "pending (", 1, true) == 1
end

-- A rule allowing the tools in `tools` only on an order whose status is `wanted`.
local function status_rule(id, tools, wanted, participle, description)
  rule {
    id = id,
    tools = tools,
    priority = 70,
    description = description,
    check = function(call, ledger)
      local order_id = call.args.order_id
      local status = facts(ledger).status
      -- A status nobody looked up yet is left to retail.facts_from_tools.
      if status ~= nil and status ~= wanted then
        return deny("order " .. tostring(order_id) .. " is '" .. tostring(status) ..
                    "' and only " .. wanted .. " orders can be " .. participle ..
                    ": tell the user this order cannot be " .. participle ..
                    (alternatives[status] or ""))
      end
      return allow()
    end,
  }
end

status_rule("retail.cancel_requires_pending", {"cancel_pending_order"}, "pending",
            "cancelled", "Only a pending order can be cancelled; check its status first.")
status_rule("retail.modify_requires_pending", {"modify_pending_order_*"}, "pending",
            "modified",
            "Only a pending order can be modified (address, payment, items); check its status first.")
status_rule("retail.return_requires_delivered", {"return_delivered_order_items"}, "delivered",
            "returned", "Only a delivered order can be returned; check its status first.")
status_rule("retail.exchange_requires_delivered", {"exchange_delivered_order_items"},
            "delivered", "exchanged",
            "Only a delivered order can be exchanged; check its status first.")

rule {
  id = "retail.no_change_after_item_modification",
  tools = {"cancel_pending_order", "modify_pending_order_*"},
  priority = 80,
  description = "Items of a pending order can be modified once; after that the order can be "
             .. "neither modified nor cancelled.",
  check = function(call, ledger)
    local order_id = call.args.order_id
    if items_modified(ledger, order_id) then
      return deny("the items of order " .. tostring(order_id) .. " were already modified, " ..
                  "which can be done only once: the order can no longer be modified or " ..
                  "cancelled; tell the user so")
    end
    return allow()
  end,
}

local valid_reasons = {["no longer needed"] = true, ["ordered by mistake"] = true}

rule {
  id = "retail.cancel_reason_valid",
  tools = {"cancel_pending_order"},
  priority = 60,
  description = "A cancellation reason is either 'no longer needed' or 'ordered by mistake'.",
  check = function(call, ledger)
    if not valid_reasons[call.args.reason] then
      return deny("'" .. tostring(call.args.reason) .. "' is not a cancellation reason: ask " ..
                  "the user whether the order is 'no longer needed' or was 'ordered by " ..
                  "mistake', and pass exactly that reason")
    end
    return allow()
  end,
}
