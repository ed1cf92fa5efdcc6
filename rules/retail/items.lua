-- New items of an item modification (pending order) or an exchange (delivered
-- order): new_item_ids[i] replaces item_ids[i], and must be an available
-- variant of the same product. What an item is comes from tool outputs only:
-- an order lists the product of each of its items (item.<id>.product_id), and
-- get_product_details lists every variant of a product with its availability
-- (item.<id>.product_id, item.<id>.available) under the product's name
-- (product.<id>.name). These rules deny on evidence; an item no tool has shown
-- yet is left to retail.facts_from_tools (see identity.lua). Pure functions of
-- call and ledger.

local rule_of, string_list, none = require("shared").rule, require("shared").string_list, {}

-- A rule on each pair (old, new) of the call: `judge(ledger, old, new)` returns
-- why the pair is denied, or nil. Items are records (item.<id>.*, {} if unknown).
local function item_rule(id, priority, description, judge)
  rule_of(id, {"modify_pending_order_items", "exchange_delivered_order_items"}, priority,
          description, function(call, ledger)
    local old, new = string_list(call.args.item_ids), string_list(call.args.new_item_ids)
    if old == nil or new == nil or #old == 0 or #old ~= #new then
      return "item_ids and new_item_ids must be two non-empty lists of the same length, "
        .. "new_item_ids[i] replacing item_ids[i]"
    end
    for i = 1, #old do
      local problem = judge(ledger, old[i], new[i], ledger.record("item", old[i]) or none,
                            ledger.record("item", new[i]) or none)
      if problem ~= nil then return problem end
    end
  end)
end

-- The product's label: "product <id>", after its name if get_product_details showed it.
local function label(ledger, product_id)
  local name = ledger.fact(std.key("product", product_id, "name"))
  local text = "product " .. tostring(product_id)
  return name ~= nil and tostring(name) .. " (" .. text .. ")" or text
end

item_rule("retail.same_product_type", 55,
  "Each item can only become another option of the same product: no change of product type.",
  function(ledger, old, new, was, now)
    local product, new_product = was.product_id, now.product_id
    if product ~= nil and new_product ~= nil and tostring(new_product) ~= tostring(product) then
      return "item " .. new .. " is a " .. label(ledger, new_product) .. ", not a "
        .. label(ledger, product) .. ": item " .. old .. " can only become another option of "
        .. "the same product, never another product"
    elseif product ~= nil and new_product == nil
        and ledger.fact(std.key("product", product, "name")) ~= nil then
      -- The product was looked up, and get_product_details lists all its
      -- variants: an item missing there is not one.
      return "item " .. new .. " is not a variant of " .. label(ledger, product) .. ": item "
        .. old .. " can only become one of the variants get_product_details lists for it"
    end
  end)

item_rule("retail.item_available", 50, "Each new item must be available.",
  function(ledger, _, new, _, now)
    if now.available == false then
      return "item " .. new .. " is not available: offer the user an available option of "
        .. (now.product_id ~= nil and label(ledger, now.product_id) or "the same product")
        .. " as get_product_details lists them"
    end
  end)
