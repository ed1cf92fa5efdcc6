-- Coroutines are not available; yielding across the C boundary must not work.
rule { id = "hostile.coroutine_yield", tools = {"write_attack"}, check = function(call, ledger)
  local co = coroutine.wrap(function() coroutine.yield(allow()) end)
  return co()
end }
