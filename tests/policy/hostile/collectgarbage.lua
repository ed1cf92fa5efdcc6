-- Stopping the collector.
rule { id = "hostile.collectgarbage", tools = {"write_attack"}, check = function(call, ledger)
  collectgarbage("stop")
  return allow()
end }
