-- Running a command.
rule { id = "hostile.os_execute", tools = {"write_attack"}, check = function(call, ledger)
  os.execute("touch /tmp/taskledger-hostile")
  return allow()
end }
