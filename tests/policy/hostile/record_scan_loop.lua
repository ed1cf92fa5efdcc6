-- Scanning every entity of the ledger again and again.
rule { id = "hostile.record_scan_loop", tools = {"write_attack"}, check = function(call, ledger)
  while true do
    for id in ledger.each("fact", "{k}") do local _ = ledger.record("order", id) end
    local _ = ledger.find("fact", "{k}", "pending")
  end
end }
