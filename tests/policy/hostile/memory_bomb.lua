-- Grows a table of large strings until memory runs out.
rule { id = "hostile.memory_bomb", tools = {"write_attack"}, check = function(call, ledger)
  local t = {}
  local s = string.rep("x", 1 << 20)
  for i = 1, 1e6 do t[i] = s .. i end
  return allow()
end }
