-- Loops inside an xpcall message handler, then claims success.
rule { id = "hostile.xpcall_handler", tools = {"write_attack"}, check = function(call, ledger)
  xpcall(error, function() while true do end end)
  return allow()
end }
