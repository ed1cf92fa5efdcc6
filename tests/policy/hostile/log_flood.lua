-- Flooding the decision record with log lines until the budget runs out.
rule { id = "hostile.log_flood", tools = {"write_attack"}, check = function(call, ledger)
  local big = string.rep("x", 60000)
  while true do log(big, big, big) end
end }
