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

-- std.key as a local: no global and proxy lookup per call.
local rule_of, string_list, key = require("shared").rule, require("shared").string_list, std.key

-- Who a tool output showed owning `method`: `user` if it paid one of their
-- orders (found through the value index), else the first other user whose
-- profile lists it or whose order it paid; nil if no output showed it.
local function owner_of(ledger, method, user)
  local pm, owner = std.escape(method), nil
  for _, order_id in ipairs(ledger.find("fact", "order.{o}.paid_with." .. pm, true)) do
    local holder = ledger.record("order", order_id).user_id
    if holder == user then return user end
    owner = owner or holder
  end
  for holder in ledger.each("fact", "user.{u}.payment." .. pm .. ".source") do return holder end
  return owner
end

rule_of("retail.payment_method_owned", {"modify_pending_order_payment",
  "modify_pending_order_items", "exchange_delivered_order_items",
  "return_delivered_order_items"}, 45, "Pay or refund only with the user's own payment methods.",
  function(call, ledger, f)
    -- No user: auth_before_action or single_user denies; no payment_method_id:
    -- facts_from_tools asks for it (there is no method to judge).
    local user, method = f.user, f.method
    if user == nil or f.source ~= nil or call.args.payment_method_id == nil then return nil end
    local owner, profile = owner_of(ledger, method, user), ledger.record("user", user)
    local methods = profile and profile.payment
    if owner ~= user and (owner ~= nil or methods ~= nil) then
      return method .. " is not a payment method of " .. user .. ": use one of the user's own "
        .. "payment methods" .. (methods and " (" .. table.concat(std.keys(methods), ", ") .. ")"
        or "")
    end
  end)

rule_of("retail.modify_payment_different_method", {"modify_pending_order_payment"}, 40,
  "The new payment method of an order must differ from its original one.",
  function(call, _, f)
    if f.original ~= nil and f.original == call.args.payment_method_id then
      return "order " .. f.order .. " is already paid with " .. tostring(f.original) .. ": the "
        .. "new payment method must be a different one; ask the user which other payment "
        .. "method to use"
    end
  end)

-- What the new items of an item change cost more than the old ones (the
-- price difference the call's payment method pays); nil if not known. (Plain
-- numbers with a 1e-9 tolerance, as tools report them: std.money is exact but costs
-- about 3 us per check on this hot path; scripts/bench policy --retail.)
local function items_due(call, ledger, f)
  -- A payment change has no items: its due is the order's total, and it gets
  -- here only when no tool showed that (the rule's `payment and total or items_due`).
  if call.tool == "modify_pending_order_payment" then return nil end
  local order = ledger.record("order", tostring(f.order)) or {}
  local old, new = string_list(call.args.item_ids), string_list(call.args.new_item_ids)
  if order.item == nil or old == nil or new == nil or #old ~= #new then return nil end
  local due = 0
  for i = 1, #old do
    local was, now = order.item[old[i]], ledger.record("item", new[i])
    if type(was and was.price) ~= "number" or type(now and now.price) ~= "number" then return end
    due = due + now.price - was.price
  end
  return due
end

rule_of("retail.gift_card_sufficient_balance", {"modify_pending_order_payment",
  "modify_pending_order_items", "exchange_delivered_order_items"}, 35,
  "A gift card's balance covers what it pays: the order total or the new items' difference.",
  function(call, ledger, f)
    if f.source ~= "gift_card" then return nil end
    -- A payment change pays the order total (read here: no helper call on this hot path;
    -- nil if no tool showed it).
    local balance, due = f.balance, call.tool == "modify_pending_order_payment"
      and ledger.fact(key("order", f.order, "total")) or items_due(call, ledger, f)
    if type(due) == "number" and type(balance) == "number" and balance + 1e-9 < due then
      return string.format("gift card %s has a balance of %.2f, less than the %.2f it would "
        .. "have to pay: ask the user for another payment method", f.method, balance, due)
    end
  end)

rule_of("retail.refund_to_original_or_gift_card", {"return_delivered_order_items"}, 40,
  "A refund goes to the order's original payment method or to one of the user's gift cards.",
  function(_, _, f)
    local original, method, source = f.original, f.method, f.source
    if original ~= nil and original ~= method and source ~= nil and source ~= "gift_card" then
      return "the refund for order " .. f.order .. " can only go to its original payment method "
        .. tostring(original) .. " or to one of the user's gift cards, not to " .. method .. " ("
        .. tostring(source) .. "): offer the user those options"
    end
  end)
