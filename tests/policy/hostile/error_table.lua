-- Throwing a table.
rule { id = "hostile.error_table", tools = {"write_attack"}, check = function(call, ledger)
  error({ code = 42 })
end }
