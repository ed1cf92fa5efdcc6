-- Throwing nil.
rule { id = "hostile.error_nil", tools = {"write_attack"}, check = function(call, ledger)
  error(nil)
end }
