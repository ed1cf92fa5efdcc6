-- Reading an undeclared global (a typo must not read as nil).
rule { id = "hostile.global_read", tools = {"write_attack"}, check = function(call, ledger)
  if ledgr == nil then return allow() end
  return allow()
end }
