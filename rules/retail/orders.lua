-- Order status preconditions. Each write acts on an order in one status:
-- cancel and modify need 'pending', return and exchange need 'delivered'. The
-- status is the one the agent last saw in a tool output (get_order_details or
-- the order a write returned), so a write earlier in the conversation that
-- changed it (a cancellation, a return) is taken into account. Modifying items
-- is a one-time action: afterwards the order is 'pending (item modified)' and
-- can no longer be modified or cancelled. A status no tool has shown yet is
-- left to retail.facts_from_tools (see identity.lua). Pure functions of call
-- and ledger.

local rule_of = require("shared").rule

-- What can be done instead with an order in `status`, for the deny reason.
local alternatives = {pending = "; a pending order can be cancelled or modified instead",
                      delivered = "; a delivered order can be returned or exchanged instead"}

-- A rule allowing `tools` only on an order whose status is `wanted`.
local function status_rule(id, tools, wanted, participle, description)
  rule_of(id, tools, 70, description, function(call, _, f)
    -- A status nobody looked up yet (nil) is left to retail.facts_from_tools.
    if f.status ~= nil and f.status ~= wanted then
      return "order " .. tostring(call.args.order_id) .. " is '" .. tostring(f.status) .. "' and "
        .. "only " .. wanted .. " orders can be " .. participle .. ": tell the user this order "
        .. "cannot be " .. participle .. (alternatives[f.status] or "")
    end
  end)
end

status_rule("retail.cancel_requires_pending", {"cancel_pending_order"}, "pending", "cancelled",
            "Only a pending order can be cancelled.")
status_rule("retail.modify_requires_pending", {"modify_pending_order_*"}, "pending", "modified",
            "Only a pending order's address, payment or items can be modified.")
status_rule("retail.return_requires_delivered", {"return_delivered_order_items"}, "delivered",
            "returned", "Only a delivered order can be returned.")
status_rule("retail.exchange_requires_delivered", {"exchange_delivered_order_items"},
            "delivered", "exchanged", "Only a delivered order can be exchanged.")

-- The items of an order were modified once its status says so ('pending (item
-- modified)'), or once this conversation ran modify_pending_order_items on it.
rule_of("retail.no_change_after_item_modification",
  {"cancel_pending_order", "modify_pending_order_*"}, 80,
  "Items can be modified once; then the order can be neither modified nor cancelled.",
  function(call, ledger, f)
    local order_id, status = call.args.order_id, f.status
    -- "pending" itself (the common case) cannot start with "pending (": no call.
    if order_id ~= nil and ((status ~= nil and status ~= "pending" and
        string.find(tostring(status), "pending (", 1, true) == 1) or
        ledger.calls("modify_pending_order_items", "order_id", order_id) > 0) then
      return "the items of order " .. tostring(order_id) .. " were already modified, which can "
        .. "be done only once: the order can no longer be modified or cancelled; tell the user so"
    end
  end)

local valid_reasons = {["no longer needed"] = true, ["ordered by mistake"] = true}

rule_of("retail.cancel_reason_valid", {"cancel_pending_order"}, 60,
  "A cancellation reason is either 'no longer needed' or 'ordered by mistake'.",
  function(call)
    if not valid_reasons[call.args.reason] then
      return "'" .. tostring(call.args.reason) .. "' is not a cancellation reason: ask the user "
        .. "whether the order is 'no longer needed' or was 'ordered by mistake', and pass exactly "
        .. "that reason"
    end
  end)
