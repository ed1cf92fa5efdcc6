-- Throwing a table whose __tostring never returns.
rule { id = "hostile.error_tostring", tools = {"write_attack"}, check = function(call, ledger)
  error(setmetatable({}, { __tostring = function() while true do end end }))
end }
