-- Loading precompiled bytecode (the classic VM escape).
rule { id = "hostile.load_bytecode", tools = {"write_attack"}, check = function(call, ledger)
  local f = loadstring("\27Lua\84\0")
  return f()
end }
