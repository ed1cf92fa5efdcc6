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

local tostring = tostring  -- a local: no global and proxy lookup per call

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

local head = "the user has not explicitly confirmed this action: tell them exactly what will "
  .. "happen ("
local tail = "), ask them to confirm with yes, and make the call only after they do"

-- Per tool whose template has one or two arguments (all of them today), the
-- whole denial reason in one concatenation: no intermediate strings, and about
-- half the VM instructions of describe()'s loop (each costs ~66 machine
-- instructions under the instruction budget's count hook; bench_turn's timed
-- check is this denial).
local reasons = {}
for tool, list in pairs(parts) do
  local a, b, c, d, e = list[1], list[2], list[3], list[4], list[5]
  if #list == 3 then
    reasons[tool] = function(args) return head .. a .. tostring(args[b]) .. c .. tail end
  elseif #list == 5 then
    reasons[tool] = function(args)
      return head .. a .. tostring(args[b]) .. c .. tostring(args[d]) .. e .. tail
    end
  end
end

require("shared").rule("retail.explicit_confirmation", {"*"}, 10,
  "Before a write, get the user's explicit yes to its listed details; one yes, one action.",
  function(call, ledger)
    if not ledger.confirmed(call) then
      local reason = reasons[call.tool]
      if reason ~= nil then return reason(call.args) end
      return head .. describe(call) .. tail
    end
  end)
