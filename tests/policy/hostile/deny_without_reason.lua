-- A deny the model could not act on is a rule bug, and still a deny.
rule { id = "hostile.deny_without_reason", tools = {"write_attack"}, check = function(call, ledger)
  return deny()
end }
