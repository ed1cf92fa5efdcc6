-- The same bomb through gsub as a method call.
rule { id = "hostile.pattern_bomb_gsub", tools = {"write_attack"}, check = function(call, ledger)
  local s = ("a"):rep(300)
  s:gsub("(.-)(.-)(.-)(.-)b", "")
  return allow()
end }
