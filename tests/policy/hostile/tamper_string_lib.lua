-- Replacing string functions through the library table and the string metatable.
rule { id = "hostile.tamper_string_lib", tools = {"write_attack"}, check = function(call, ledger)
  local mt = getmetatable("")
  if type(mt) == "table" then mt.__index = { rep = function() return "" end } end
  string.rep = function() return "" end
  return allow()
end }
