-- Explicit confirmation. Before a consequential action the agent lists its
-- details and the user answers with an explicit yes; extract.json's user.confirm
-- pattern turns that yes into the condition `confirmation`, and one yes covers
-- the one write that executes next. This rule runs after every other retail
-- rule (lowest priority), so the agent only asks the user to confirm an action
-- the policy would otherwise allow. Pure function of call and ledger.

-- A short description of the action, for the agent to put in front of the user:
-- the tool's template with each {argument} filled in.
local templates = {
  cancel_pending_order = "cancel order {order_id} (reason: {reason})",
  return_delivered_order_items =
    "return the listed items of order {order_id} with the refund to {payment_method_id}",
  exchange_delivered_order_items =
    "exchange the listed items of order {order_id} (price difference via {payment_method_id})",
  modify_pending_order_items =
    "modify the listed items of order {order_id} (price difference via {payment_method_id})",
  modify_pending_order_payment = "pay order {order_id} with {payment_method_id}",
  modify_pending_order_address = "change the shipping address of order {order_id}",
  modify_user_address = "change the default address of user {user_id}",
}

-- Each template split once, at load, into its text and the argument names in
-- between ({"cancel order ", "order_id", " (reason: ", "reason", ")"}), so a
-- denial concatenates instead of running string.gsub with a callback (about
-- 0.7 us of a denied cancel_pending_order check, bench_turn).
local parts = {}
for tool, template in pairs(templates) do
  local list, at = {}, 1
  for first, name, after in string.gmatch(template, "(){([%w_]+)}()") do
    list[#list + 1] = string.sub(template, at, first - 1)
    list[#list + 1] = name
    at = after
  end
  list[#list + 1] = string.sub(template, at)
  parts[tool] = list
end

local function describe(call)
  local list = parts[call.tool]
  if list == nil then  -- a tool without a template: its name, filled the same way
    return (string.gsub(call.tool, "{([%w_]+)}", function(name)
      return tostring(call.args[name])
    end))
  end
  local args, text = call.args, list[1]
  for i = 2, #list, 2 do text = text .. tostring(args[list[i]]) .. list[i + 1] end
  return text
end

require("shared").rule("retail.explicit_confirmation", {"*"}, 10,
  "Before a write, get the user's explicit yes to its listed details; one yes, one action.",
  function(call, ledger)
    if not ledger.confirmed(call) then
      return "the user has not explicitly confirmed this action: tell them exactly what will "
        .. "happen (" .. describe(call) .. "), ask them to confirm with yes, and make the call "
        .. "only after they do"
    end
  end)
