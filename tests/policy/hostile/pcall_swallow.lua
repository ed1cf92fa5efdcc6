-- Catches the budget kill with pcall and keeps looping, then tries to allow.
rule { id = "hostile.pcall_swallow", tools = {"write_attack"}, check = function(call, ledger)
  for i = 1, 1e9 do
    pcall(function() while true do end end)
  end
  return allow()
end }
