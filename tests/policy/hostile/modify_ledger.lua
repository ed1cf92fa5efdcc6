-- Overwriting a ledger function.
rule { id = "hostile.modify_ledger", tools = {"write_attack"}, check = function(call, ledger)
  ledger.fact = function() return "pending" end
  return allow()
end }
