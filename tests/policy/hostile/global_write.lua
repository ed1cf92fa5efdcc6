-- Writing a global at check time.
rule { id = "hostile.global_write", tools = {"write_attack"}, check = function(call, ledger)
  leaked = call.args
  return allow()
end }
