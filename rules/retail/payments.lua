-- Payment methods. A payment or a refund uses a method of the conversation's
-- user; a new payment method differs from the one the order was paid with; a
-- gift card covers what it pays; a return is refunded to the original payment
-- method or to one of the user's gift cards. Evidence comes from tool outputs:
-- get_user_details lists a user's methods (user.<id>.payment.<pm>.source, and
-- .balance for gift cards); an order lists its payments
-- (order.<id>.paid_with.<pm>), the first one being the original payment
-- (order.<id>.original_payment_method, for order.<id>.total). These rules deny
-- on evidence; a fact no tool has shown yet is left to retail.facts_from_tools
-- (see identity.lua). Pure functions of call and ledger.

local shared = require("shared")
local facts, string_list = shared.facts, shared.string_list

-- The payment methods get_user_details listed for `user` (a record: method id →
-- {source [, balance]}), or nil if the profile was not looked up.
local function methods_of(ledger, user)
  local profile = user ~= nil and ledger.record("user", user) or nil
  return profile and profile.payment
end

-- The user a tool output showed owning `method` (a profile listing it, or an
-- order paid with it), preferring `user` itself; nil if no output showed it.
local function owner_of(ledger, method, user)
  local pm, holders = std.escape(method), {}
  for holder in ledger.each("fact", "user.{u}.payment." .. pm .. ".source") do
    holders[#holders + 1] = holder
  end
  for order_id in ledger.each("fact", "order.{o}.paid_with." .. pm) do
    holders[#holders + 1] = ledger.record("order", order_id).user_id
  end
  return std.contains(holders, user) and user or holders[1]
end

rule {
  id = "retail.payment_method_owned",
  tools = {"modify_pending_order_payment", "modify_pending_order_items",
           "exchange_delivered_order_items", "return_delivered_order_items"},
  priority = 45,
  description = "Pay or refund only with a payment method of the authenticated user.",
  check = function(call, ledger)
    -- No user: retail.auth_before_action or retail.single_user denies.
    local f = facts(ledger)
    local user, method = f.user, f.method
    if user == nil or f.source ~= nil then
      return allow()
    end
    local owner, methods = owner_of(ledger, method, user), methods_of(ledger, user)
    if owner == user or (owner == nil and methods == nil) then
      return allow()
    end
    local own = methods and " (" .. table.concat(std.keys(methods), ", ") .. ")" or ""
    return deny(method .. " is not a payment method of " .. user .. ": use one of the " ..
                "user's own payment methods" .. own)
  end,
}

rule {
  id = "retail.modify_payment_different_method",
  tools = {"modify_pending_order_payment"},
  priority = 40,
  description = "The new payment method of an order must differ from its original one.",
  check = function(call, ledger)
    local f = facts(ledger)
    local original = f.original
    if original ~= nil and original == call.args.payment_method_id then
      return deny("order " .. f.order .. " is already paid with " .. tostring(original) ..
                  ": the new payment method must be a different one; ask the user which " ..
                  "other payment method to use")
    end
    return allow()
  end,
}

-- What the call's payment method has to pay: the order total for a payment
-- change, else the price difference of the new items; nil if not known.
local function amount_due(call, ledger)
  local order_id = tostring(call.args.order_id)
  if call.tool == "modify_pending_order_payment" then
    return ledger.fact(std.key("order", order_id, "total"))
  end
  local order = ledger.record("order", order_id) or {}
  local old, new = string_list(call.args.item_ids), string_list(call.args.new_item_ids)
  if order.item == nil or old == nil or new == nil or #old ~= #new then
    return nil
  end
  local due = 0
  for i = 1, #old do
    local was, now = order.item[old[i]], ledger.record("item", new[i])
    if type(was and was.price) ~= "number" or type(now and now.price) ~= "number" then
      return nil
    end
    due = due + now.price - was.price
  end
  return due
end

rule {
  id = "retail.gift_card_sufficient_balance",
  tools = {"modify_pending_order_payment", "modify_pending_order_items",
           "exchange_delivered_order_items"},
  priority = 35,
  description = "A gift card must have enough balance for what it pays: the order total, or "
             .. "the price difference of the new items.",
  check = function(call, ledger)
    local f = facts(ledger)
    local method = f.method
    if f.source ~= "gift_card" then
      return allow()
    end
    local due = amount_due(call, ledger)
    local balance = f.balance
    if type(due) == "number" and type(balance) == "number" and balance + 1e-9 < due then
      return deny(string.format("gift card %s has a balance of %.2f, less than the %.2f it " ..
                                "would have to pay: ask the user for another payment method",
                                method, balance, due))
    end
    return allow()
  end,
}

rule {
  id = "retail.refund_to_original_or_gift_card",
  tools = {"return_delivered_order_items"},
  priority = 40,
  description = "A refund goes to the original payment method of the order or to an existing "
             .. "gift card of the user.",
  check = function(call, ledger)
    local f = facts(ledger)
    local order_id, method, original, source = f.order, f.method, f.original, f.source
    if original == nil or original == method or source == nil or source == "gift_card" then
      return allow()
    end
    return deny("the refund for order " .. order_id .. " can only go to its original payment " ..
                "method " .. tostring(original) .. " or to one of the user's gift cards, not " ..
                "to " .. method .. " (" .. tostring(source) .. "): offer the user those options")
  end,
}
