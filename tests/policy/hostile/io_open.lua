-- Reading a file.
rule { id = "hostile.io_open", tools = {"write_attack"}, check = function(call, ledger)
  io.open("/etc/passwd"):read("a")
  return allow()
end }
