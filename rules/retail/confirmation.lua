-- Explicit confirmation. Before a consequential action the agent lists its
-- details and the user answers with an explicit yes; extract.json's user.confirm
-- pattern turns that yes into the condition `confirmation`, and one yes covers
-- the one write that executes next. This rule runs after every other retail
-- rule (lowest priority), so the agent only asks the user to confirm an action
-- the policy would otherwise allow. Pure function of call and ledger.

local tostring = tostring  -- a local: no global and proxy lookup per call

local head = "the user has not explicitly confirmed this action: tell them exactly what will "
  .. "happen ("
local tail = "), ask them to confirm with yes, and make the call only after they do"

-- Per write tool, the denial reason with a short description of the action
-- for the agent to put in front of the user (its arguments filled in), made
-- by one concatenation: no template filled at check time, no intermediate
-- strings. Each VM instruction costs about 66 machine instructions under the
-- instruction budget's count hook (docs/rule-api.md, "Sandbox"), and
-- bench_turn's timed check is this denial.
local reasons = {
  cancel_pending_order = function(args) return head .. "cancel order " .. tostring(args.order_id)
    .. " (reason: " .. tostring(args.reason) .. ")" .. tail end,
  return_delivered_order_items = function(args)
    return head .. "return the listed items of order " .. tostring(args.order_id)
      .. " with the refund to " .. tostring(args.payment_method_id) .. tail end,
  exchange_delivered_order_items = function(args)
    return head .. "exchange the listed items of order " .. tostring(args.order_id)
      .. " (price difference via " .. tostring(args.payment_method_id) .. ")" .. tail end,
  modify_pending_order_items = function(args)
    return head .. "modify the listed items of order " .. tostring(args.order_id)
      .. " (price difference via " .. tostring(args.payment_method_id) .. ")" .. tail end,
  modify_pending_order_payment = function(args) return head .. "pay order "
    .. tostring(args.order_id) .. " with " .. tostring(args.payment_method_id) .. tail end,
  modify_pending_order_address = function(args)
    return head .. "change the shipping address of order " .. tostring(args.order_id) .. tail end,
  modify_user_address = function(args)
    return head .. "change the default address of user " .. tostring(args.user_id) .. tail end,
}

require("shared").rule("retail.explicit_confirmation", {"*"}, 10,
  "Before a write, get the user's explicit yes to its listed details; one yes, one action.",
  function(call, ledger)
    if not ledger.confirmed(call) then
      local reason = reasons[call.tool]  -- none for another modify_pending_order_*: its name
      return reason ~= nil and reason(call.args) or head .. call.tool .. tail
    end
  end)
