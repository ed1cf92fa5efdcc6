-- Rewriting the call's arguments for the rules that follow.
rule { id = "hostile.modify_args", tools = {"write_attack"}, check = function(call, ledger)
  call.args.order_id = "#W0"
  return allow()
end }
