-- A value whose __tostring never returns, handed to log().
rule { id = "hostile.log_tostring_loop", tools = {"write_attack"}, check = function(call, ledger)
  local t = setmetatable({}, {__tostring = function() while true do end end})
  log(t)
  return allow()
end }
