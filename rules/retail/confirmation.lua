-- Explicit confirmation. Before a consequential action the agent lists its
-- details and the user answers with an explicit yes; extract.json's user.confirm
-- pattern turns that yes into the condition `confirmation`, and one yes covers
-- the one write that executes next. This rule runs after every other retail
-- rule (lowest priority), so the agent only asks the user to confirm an action
-- the policy would otherwise allow. Pure function of call and ledger.

-- A short description of the action, for the agent to put in front of the user.
local function describe(call)
  local a = call.args
  if call.tool == "cancel_pending_order" then
    return "cancel order " .. tostring(a.order_id) .. " (reason: " .. tostring(a.reason) .. ")"
  elseif call.tool == "return_delivered_order_items" then
    return "return the listed items of order " .. tostring(a.order_id) ..
           " with the refund to " .. tostring(a.payment_method_id)
  elseif call.tool == "exchange_delivered_order_items" then
    return "exchange the listed items of order " .. tostring(a.order_id) ..
           " (price difference via " .. tostring(a.payment_method_id) .. ")"
  elseif call.tool == "modify_pending_order_items" then
    return "modify the listed items of order " .. tostring(a.order_id) ..
           " (price difference via " .. tostring(a.payment_method_id) .. ")"
  elseif call.tool == "modify_pending_order_payment" then
    return "pay order " .. tostring(a.order_id) .. " with " .. tostring(a.payment_method_id)
  elseif call.tool == "modify_pending_order_address" then
    return "change the shipping address of order " .. tostring(a.order_id)
  elseif call.tool == "modify_user_address" then
    return "change the default address of user " .. tostring(a.user_id)
  end
  return call.tool
end

rule {
  id = "retail.explicit_confirmation",
  tools = {"*"},
  priority = 10,
  description = "Before a write, list the action details and get the user's explicit yes; "
             .. "one yes confirms one action.",
  check = function(call, ledger)
    if ledger.confirmed(call) then
      return allow()
    end
    return deny("the user has not explicitly confirmed this action: tell them exactly what " ..
                "will happen (" .. describe(call) .. "), ask them to confirm with yes, and " ..
                "make the call only after they do")
  end,
}
