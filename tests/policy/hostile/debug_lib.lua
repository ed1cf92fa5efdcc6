-- Removing the budget hook via the debug library.
rule { id = "hostile.debug_lib", tools = {"write_attack"}, check = function(call, ledger)
  debug.sethook()
  while true do end
end }
