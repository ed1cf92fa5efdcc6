-- The retail pack's library (docs/rule-api.md, "Pack libraries: require"):
-- what the rules judge about a call, looked up once per check, and the way
-- every retail rule is declared. Loaded with `local shared = require("shared")`.
-- Pure functions.

local M = {}
-- Library functions as file-level locals: a global read goes through the
-- sandbox's environment and `std`'s read-only proxy (two metatable lookups)
-- on every call, a local is one VM register (bench_policy --retail).
local tostring, key = tostring, std.key

-- The ids of the authenticated users, ", "-separated (asked by the rule that
-- denies a conversation with several).
function M.authenticated_names(ledger)
  local shown = std.filter(ledger.keys("identifier", "user.authenticated."),
                           function(k) return ledger.verified("identifier", k) end)
  return table.concat(std.map(shown, function(k) return tostring(ledger.identifier(k)) end), ", ")
end

-- What the retail rules judge about a call, looked up once per check however
-- many rules read it (rule{ facts = call_facts }; a flat table, read-only to
-- the rules). "Known" means a tool output showed it (ledger.verified: live and
-- verified).
--   users          how many users are authenticated (verified identifiers
--                  user.authenticated.<id>; their ids: M.authenticated_names)
--   user           the one authenticated user this conversation serves, or nil
--                  when none or several were authenticated (retail.auth_before_action
--                  and retail.single_user deny those)
--   order          the order_id argument as text (nil without one), and from the
--                  order's facts: status, owner (user_id), original (the original
--                  payment method), status_known, owner_known
--   method         tostring(payment_method_id) ("nil" without one), and for the
--                  conversation's user: source (nil if not one of their methods,
--                  or without a payment_method_id), source_known, balance (gift cards)
-- The value is one table, F, refilled whole by every call (every field, nil
-- included), so a check allocates no table for it: rules only see it through
-- the checker's read-only proxy, pointed at it anew each check. (A fresh table
-- per check costs about 0.1 us p50 and 0.5 us p99 in garbage, bench_policy --retail.)
-- Each field is stored with a statement of its own (F.x = local is one VM
-- instruction; a multiple assignment first copies every value to a new
-- register): with the instruction budget's count hook armed, every VM
-- instruction a check runs costs about 66 machine instructions
-- (docs/rule-api.md, "Sandbox").
local F = {}
local function call_facts(call, ledger)
  local args = call.args
  local user, users = ledger.single("identifier", "user.authenticated.")
  if user ~= nil then user = tostring(user) end
  local order_id, method_id = args.order_id, args.payment_method_id
  local status, status_known, owner, owner_known, original, source, source_known, balance
  if order_id ~= nil then
    order_id = tostring(order_id)
    status, status_known, owner, owner_known, original =
      ledger.fields("fact", key("order", order_id), "status", "user_id", "original_payment_method")
  end
  -- Without a payment_method_id there is no method to look up: no read of a
  -- key named "...payment.nil.source" (it would be listed in the decision's reads).
  if user ~= nil and method_id ~= nil then
    local pm = key("user", user, "payment", method_id)  -- fields: no key built in Lua
    source, source_known = ledger.fields("fact", pm, "source")
    if source == "gift_card" then balance = ledger.fields("fact", pm, "balance") end
  end
  F.users = users; F.user = user; F.method = tostring(method_id); F.order = order_id
  F.status = status; F.status_known = status_known; F.owner = owner; F.owner_known = owner_known
  F.original = original; F.source = source; F.source_known = source_known; F.balance = balance
  return F
end

-- Declares a retail rule. `why(call, ledger, facts)` returns the reason the call
-- is denied, or nil to allow it (rule{ why = ... }: the checker makes the
-- verdict, no wrapper call per rule); `facts` is call_facts(call, ledger),
-- computed once per check (docs/rule-api.md "Facts computed once per check").
function M.rule(id, tools, priority, description, why)
  rule {id = id, tools = tools, priority = priority, description = description,
        facts = call_facts, why = why}
end

-- The JSON array `value` (call arguments are read-only tables) as a plain
-- array of strings, or nil if it is not an array.
function M.string_list(value)
  return type(value) == "table" and std.map(value, tostring) or nil
end

return M
