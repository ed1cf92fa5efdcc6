-- New items of an item modification (pending order) or an exchange (delivered
-- order): new_item_ids[i] replaces item_ids[i], and must be an available
-- variant of the same product. What an item is comes from tool outputs only:
-- an order lists the product of each of its items (item.<id>.product_id), and
-- get_product_details lists every variant of a product with its availability
-- (item.<id>.product_id, item.<id>.available) under the product's name
-- (product.<id>.name). These rules deny on evidence; an item no tool has shown
-- yet is left to retail.facts_from_tools (see identity.lua). Pure functions of
-- call and ledger.

local string_list = require("shared").string_list

-- A rule on each pair (old, new) of the call: `judge(ledger, old, new)` returns
-- why the pair is denied, or nil.
local function item_rule(id, priority, description, judge)
  rule {
    id = id,
    tools = {"modify_pending_order_items", "exchange_delivered_order_items"},
    priority = priority,
    description = description,
    check = function(call, ledger)
      local old, new = string_list(call.args.item_ids), string_list(call.args.new_item_ids)
      if old == nil or new == nil or #old == 0 or #old ~= #new then
        return deny("item_ids and new_item_ids must be two non-empty lists of the same " ..
                    "length, new_item_ids[i] replacing item_ids[i]")
      end
      for i = 1, #old do
        local problem = judge(ledger, old[i], new[i])
        if problem ~= nil then
          return deny(problem)
        end
      end
      return allow()
    end,
  }
end

-- The item record (item.<id>.*) or an empty table; its product's name, or nil.
local function item(ledger, id)
  return ledger.record("item", id) or {}
end

local function product_name(ledger, product_id)
  local product = ledger.record("product", tostring(product_id))
  return product and product.name
end

local function label(ledger, product_id)
  local name = product_name(ledger, product_id)
  local text = "product " .. tostring(product_id)
  return name ~= nil and tostring(name) .. " (" .. text .. ")" or text
end

item_rule("retail.same_product_type", 55,
  "Each item can only become another option of the same product: no change of product type.",
  function(ledger, old, new)
    local product, new_product = item(ledger, old).product_id, item(ledger, new).product_id
    if product == nil then
      return nil
    end
    if new_product ~= nil and tostring(new_product) ~= tostring(product) then
      return "item " .. new .. " is a " .. label(ledger, new_product) .. ", not a " ..
             label(ledger, product) .. ": item " .. old .. " can only become another " ..
             "option of the same product, never another product"
    end
    -- get_product_details lists all variants: an item missing there is not one.
    if new_product == nil and product_name(ledger, product) ~= nil then
      return "item " .. new .. " is not a variant of " .. label(ledger, product) .. ": item " ..
             old .. " can only become one of the variants get_product_details lists for it"
    end
  end)

item_rule("retail.item_available", 50, "Each new item must be available.",
  function(ledger, _, new)
    local variant = item(ledger, new)
    if variant.available == false then
      return "item " .. new .. " is not available: offer the user an available option of " ..
             (variant.product_id ~= nil and label(ledger, variant.product_id) or
              "the same product") .. " as get_product_details lists them"
    end
  end)
