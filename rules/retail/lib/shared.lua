-- Helpers the retail rules share: a pack library (docs/rule-api.md, "Pack
-- libraries: require"), loaded by the files that use it with
-- `local shared = require("shared")` rather than leaked to them as globals.
-- Pure functions.

local M = {}

-- The user ids authenticated in this conversation (the verified identifiers
-- user.authenticated.<id>), sorted.
function M.users(ledger)
  local users = {}
  for _, key in ipairs(ledger.keys("identifier", "user.authenticated.")) do
    if ledger.verified("identifier", key) then
      users[#users + 1] = tostring(ledger.identifier(key))
    end
  end
  table.sort(users)
  return users
end

-- What the retail rules judge about a call, looked up once per check however
-- many rules read it (ledger.memo; a flat read-only table):
--   users          how many users are authenticated (M.users lists them)
--   user           the user this conversation serves: its one authenticated
--                  user, or nil when none or several were authenticated
--                  (retail.auth_before_action and retail.single_user deny those)
--   order          the order_id argument as text (nil without one), and from
--                  its record: status, owner (user_id), original (the original
--                  payment method), each with <name>_known when a tool showed it
--   method         tostring(payment_method_id) ("nil" without one), and for the
--                  conversation's user: source (nil if not one of their
--                  methods), source_known, balance (gift cards)
local function call_facts(ledger, call)
  local args, keys = call.args, ledger.keys("identifier", "user.authenticated.")
  local f = {users = 0, user = false, order = false, status = false, status_known = false,
             owner = false, owner_known = false, original = false, method = false,
             source = false, source_known = false, balance = false}
  for i = 1, #keys do
    if ledger.verified("identifier", keys[i]) then
      f.users = f.users + 1
    end
  end
  f.user = #keys == 1 and f.users == 1 and tostring(ledger.identifier(keys[1])) or nil
  f.method = tostring(args.payment_method_id)
  if args.order_id ~= nil then
    f.order = tostring(args.order_id)
    local order = std.key("order", f.order)
    f.status, f.owner = ledger.fact(order .. ".status"), ledger.fact(order .. ".user_id")
    f.status_known = f.status ~= nil and ledger.verified("fact", order .. ".status")
    f.owner_known = f.owner ~= nil and ledger.verified("fact", order .. ".user_id")
    f.original = ledger.fact(order .. ".original_payment_method")
  else
    f.order, f.status, f.owner, f.original = nil, nil, nil, nil
  end
  if f.user ~= nil then
    local method = std.key("user", f.user, "payment", f.method)
    f.source = ledger.fact(method .. ".source")
    f.source_known = f.source ~= nil and ledger.verified("fact", method .. ".source")
    f.balance = f.source == "gift_card" and ledger.fact(method .. ".balance") or nil
  else
    f.source, f.balance = nil, nil
  end
  return f
end

function M.facts(ledger)
  return ledger.memo(call_facts)
end

-- The JSON array `value` (call arguments are read-only views: tables or
-- userdata proxies) as a plain array of strings, or nil if it is not an array.
function M.string_list(value)
  local kind = type(value)
  if kind ~= "table" and kind ~= "userdata" then
    return nil
  end
  local out = {}
  for i = 1, #value do
    out[i] = tostring(value[i])
  end
  return out
end

return M
