-- Helpers the retail rules share. Every top-level Lua file of a pack runs in
-- one sandbox, and a global declared at a file's top level is visible to the
-- rules of every file (docs/rule-api.md, "Sandbox"), so these two are
-- declared once here rather than copied into each file that needs them.
-- Pure functions.

-- The user this conversation serves: its one authenticated user, or nil when
-- none or several were authenticated (retail.auth_before_action and
-- retail.single_user deny those calls; see identity.lua).
function conversation_user(ledger)
  local keys = ledger.keys("identifier", "user.authenticated.")
  if #keys ~= 1 or not ledger.verified("identifier", keys[1]) then
    return nil
  end
  return tostring(ledger.identifier(keys[1]))
end

-- The JSON array `value` (call arguments are read-only views: tables or
-- userdata proxies) as a plain array of strings, or nil if it is not an array.
function string_list(value)
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
