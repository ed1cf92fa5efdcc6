-- A finalizer that would run later, outside this rule's budget.
rule { id = "hostile.gc_finalizer", tools = {"write_attack"}, check = function(call, ledger)
  setmetatable({}, { __gc = function() while true do end end })
  return allow()
end }
