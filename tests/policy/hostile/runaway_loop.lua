-- An endless loop: the instruction budget must stop it.
rule { id = "hostile.runaway_loop", tools = {"write_attack"}, check = function(call, ledger)
  while true do end
end }
