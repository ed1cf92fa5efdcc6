-- One allocation far beyond the cap.
rule { id = "hostile.huge_rep", tools = {"write_attack"}, check = function(call, ledger)
  local s = string.rep("x", 1 << 40)
  return allow()
end }
