-- Running a file.
rule { id = "hostile.dofile", tools = {"write_attack"}, check = function(call, ledger)
  dofile("/etc/passwd")
  return allow()
end }
