-- Dumping a function to bytecode.
rule { id = "hostile.string_dump", tools = {"write_attack"}, check = function(call, ledger)
  local b = string.dump(function() return 1 end)
  return allow()
end }
