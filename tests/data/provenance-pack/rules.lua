-- A transfer's recipient must have a trusted source: the user's message or a
-- trusted field of a tool output (pack.json `trust`). The denial says where
-- the value was seen.
rule {
  id = "bank.recipient_trusted",
  tools = {"send_money"},
  check = function(call, ledger)
    if not call.trusted("recipient") then return deny(call.explain("recipient")) end
    return allow()
  end,
}
