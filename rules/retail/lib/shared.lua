-- The retail pack's library (docs/rule-api.md, "Pack libraries: require"):
-- what the rules judge about a call, looked up once per check, and the way
-- every retail rule is declared. Loaded with `local shared = require("shared")`.
-- Pure functions.

local M = {}

-- What the retail rules judge about a call, looked up once per check however
-- many rules read it (ledger.memo; a flat read-only table). "Known" means a
-- tool output showed it (ledger.verified: live and verified).
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
local function call_facts(ledger, call)
  local args, keys = call.args, ledger.keys("identifier", "user.authenticated.")
  local f = {users = 0, method = tostring(args.payment_method_id)}
  for i = 1, #keys do
    if ledger.verified("identifier", keys[i]) then
      local id = tostring(ledger.identifier(keys[i]))
      f.users, f.names = f.users + 1, f.names and f.names .. ", " .. id or id
    end
  end
  f.user = f.users == 1 and f.names or nil
  if args.order_id ~= nil then
    f.order = tostring(args.order_id)
    local order = std.key("order", f.order)
    f.status, f.owner = ledger.fact(order .. ".status"), ledger.fact(order .. ".user_id")
    f.status_known = ledger.verified("fact", order .. ".status")
    f.owner_known = ledger.verified("fact", order .. ".user_id")
    f.original = ledger.fact(order .. ".original_payment_method")
  end
  if f.user ~= nil then
    local method = std.key("user", f.user, "payment", f.method)
    f.source = ledger.fact(method .. ".source")
    f.source_known = ledger.verified("fact", method .. ".source")
    f.balance = f.source == "gift_card" and ledger.fact(method .. ".balance") or nil
  end
  return f
end

-- Declares a retail rule. `why(call, ledger, facts)` returns the reason the call
-- is denied, or nil to allow it; `facts` is call_facts(ledger, call), computed once
-- per check (ledger.memo, docs/rule-api.md "Values computed once per check").
function M.rule(id, tools, priority, description, why)
  rule {id = id, tools = tools, priority = priority, description = description,
        check = function(call, ledger)
          local reason = why(call, ledger, ledger.memo(call_facts))
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
