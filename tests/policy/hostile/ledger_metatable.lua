-- Swapping or editing the ledger's metatable.
rule { id = "hostile.ledger_metatable", tools = {"write_attack"}, check = function(call, ledger)
  local mt = getmetatable(ledger)
  if type(mt) == "table" then mt.__index = {} end
  setmetatable(ledger, {})
  return allow()
end }
