-- Changing a money value in place after a check compared it.
rule { id = "hostile.money_forge", tools = {"write_attack"}, check = function(call, ledger)
  local limit = std.money("10.00")
  limit.units = 1000000
  return allow()
end }
