-- Helpers the retail rules share: a pack library (docs/rule-api.md, "Pack
-- libraries: require"), loaded by the files that use it with
-- `local shared = require("shared")` rather than leaked to them as globals.
-- Pure functions.

local M = {}

-- The user ids authenticated in this conversation (the verified identifiers
-- user.authenticated.<id>), sorted; a read-only list, computed once per check
-- (ledger.memo) however many rules ask.
local function authenticated(ledger)
  local users = {}
  for _, key in ipairs(ledger.keys("identifier", "user.authenticated.")) do
    if ledger.verified("identifier", key) then
      users[#users + 1] = tostring(ledger.identifier(key))
    end
  end
  table.sort(users)
  return users
end

-- The one user id authenticated in this conversation, or nil when none or
-- several were authenticated.
local function only_user(ledger)
  local keys = ledger.keys("identifier", "user.authenticated.")
  if #keys ~= 1 or not ledger.verified("identifier", keys[1]) then
    return nil
  end
  return tostring(ledger.identifier(keys[1]))
end

function M.users(ledger)
  return ledger.memo(authenticated)
end

-- The user this conversation serves: its one authenticated user, or nil when
-- none or several were authenticated (retail.auth_before_action and
-- retail.single_user deny those calls; see identity.lua).
function M.conversation_user(ledger)
  return ledger.memo(only_user)
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
