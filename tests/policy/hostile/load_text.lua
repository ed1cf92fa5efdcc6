-- Compiling code at run time.
rule { id = "hostile.load_text", tools = {"write_attack"}, check = function(call, ledger)
  local f = load("return allow()")
  return f()
end }
