-- The retail pack's library (docs/rule-api.md, "Pack libraries: require"):
-- what the rules judge about a call, looked up once per check, and the way
-- every retail rule is declared. Loaded with `local shared = require("shared")`.
-- Pure functions.

local M = {}

-- What the retail rules judge about a call, looked up once per check however
-- many rules read it (rule{ facts = call_facts }; a flat table the rules only
-- read). "Known" means a tool output showed it (ledger.verified: live and
-- verified).
--   users          how many users are authenticated (verified identifiers
--                  user.authenticated.<id>); names: their ids, ", "-separated
--   user           the one authenticated user this conversation serves, or nil
--                  when none or several were authenticated (retail.auth_before_action
--                  and retail.single_user deny those)
--   order          the order_id argument as text (nil without one), and from the
--                  order's facts: status, owner (user_id), original (the original
--                  payment method), status_known, owner_known
--   method         tostring(payment_method_id) ("nil" without one), and for the
--                  conversation's user: source (nil if not one of their methods),
--                  source_known, balance (gift cards)
local function call_facts(call, ledger)
  local args, keys = call.args, ledger.keys("identifier", "user.authenticated.")
  local users, names = 0, nil
  for i = 1, #keys do
    if ledger.verified("identifier", keys[i]) then
      local id = tostring(ledger.identifier(keys[i]))
      users, names = users + 1, names and names .. ", " .. id or id
    end
  end
  local user, method = users == 1 and names or nil, tostring(args.payment_method_id)
  local order_id = args.order_id ~= nil and tostring(args.order_id) or nil
  local order = order_id and std.key("order", order_id)
  local pm = user and std.key("user", user, "payment", method)
  local source = pm and ledger.fact(pm .. ".source")
  -- One constructor: the table is allocated once, at its full size.
  return {users = users, names = names, user = user, method = method, order = order_id,
          status = order and ledger.fact(order .. ".status"),
          owner = order and ledger.fact(order .. ".user_id"),
          status_known = order and ledger.verified("fact", order .. ".status"),
          owner_known = order and ledger.verified("fact", order .. ".user_id"),
          original = order and ledger.fact(order .. ".original_payment_method"),
          source = source, source_known = pm and ledger.verified("fact", pm .. ".source"),
          balance = source == "gift_card" and ledger.fact(pm .. ".balance") or nil}
end

-- Declares a retail rule. `why(call, ledger, facts)` returns the reason the call
-- is denied, or nil to allow it; `facts` is call_facts(call, ledger), computed once
-- per check (docs/rule-api.md "Facts computed once per check").
function M.rule(id, tools, priority, description, why)
  rule {id = id, tools = tools, priority = priority, description = description,
        facts = call_facts,
        check = function(call, ledger, facts)
          local reason = why(call, ledger, facts)
          return reason and deny(reason) or allow()
        end}
end

-- The JSON array `value` (call arguments are read-only views: tables or
-- userdata proxies) as a plain array of strings, or nil if it is not an array.
function M.string_list(value)
  local kind = type(value)
  return (kind == "table" or kind == "userdata") and std.map(value, tostring) or nil
end

return M
