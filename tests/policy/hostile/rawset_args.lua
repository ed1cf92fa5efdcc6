-- Bypassing __newindex with rawset.
rule { id = "hostile.rawset_args", tools = {"write_attack"}, check = function(call, ledger)
  rawset(call.args, "order_id", "#W0")
  return allow()
end }
