-- Unbounded recursion.
rule { id = "hostile.stack_overflow", tools = {"write_attack"}, check = function(call, ledger)
  local function f(n) return 1 + f(n + 1) end
  return f(1)
end }
