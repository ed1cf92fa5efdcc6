-- Loading a module.
rule { id = "hostile.require_module", tools = {"write_attack"}, check = function(call, ledger)
  local os = require("os")
  return allow()
end }
