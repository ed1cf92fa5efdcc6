-- Catastrophic backtracking: ~8 s in stock Lua.
rule { id = "hostile.pattern_bomb", tools = {"write_attack"}, check = function(call, ledger)
  string.find(string.rep("a", 400), ".-.-.-b")
  return allow()
end }
