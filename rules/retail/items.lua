-- New items of an item modification (pending order) or an exchange (delivered
-- order): new_item_ids[i] replaces item_ids[i], and must be an available
-- variant of the same product. What an item is comes from tool outputs only:
-- an order lists the product of each of its items (item.<id>.product_id), and
-- get_product_details lists every variant of a product with its availability
-- (item.<id>.product_id, item.<id>.available) under the product's name
-- (product.<id>.name). These rules deny on evidence; an item no tool has shown
-- yet is left to retail.facts_from_tools (see identity.lua). Pure functions of
-- call and ledger.

local shared = require("shared")
local string_list = shared.string_list

local item_tools = {"modify_pending_order_items", "exchange_delivered_order_items"}

-- The pairs {old, new} of the call, or nil and what is wrong with the lists.
local function item_pairs(call)
  local old, new = string_list(call.args.item_ids), string_list(call.args.new_item_ids)
  if old == nil or new == nil or #old == 0 or #old ~= #new then
    return nil, "item_ids and new_item_ids must be two non-empty lists of the same length, " ..
                "new_item_ids[i] replacing item_ids[i]"
  end
  local result = {}
  for i = 1, #old do
    result[i] = {old = old[i], new = new[i]}
  end
  return result
end

local function product_label(ledger, product_id)
  local name = ledger.fact(std.key("product", product_id, "name"))
  if name ~= nil then
    return tostring(name) .. " (product " .. product_id .. ")"
  end
  return "product " .. product_id
end

rule {
  id = "retail.same_product_type",
  tools = item_tools,
  priority = 55,
  description = "Each item can only become another option of the same product: no change of "
             .. "product type.",
  check = function(call, ledger)
    local pairs_of_items, problem = item_pairs(call)
    if pairs_of_items == nil then
      return deny(problem)
    end
    for _, p in ipairs(pairs_of_items) do
      local product = ledger.fact(std.key("item", p.old, "product_id"))
      local new_product = ledger.fact(std.key("item", p.new, "product_id"))
      if product ~= nil then
        product = tostring(product)
        if new_product ~= nil and tostring(new_product) ~= product then
          return deny("item " .. p.new .. " is a " ..
                      product_label(ledger, tostring(new_product)) .. ", not a " ..
                      product_label(ledger, product) .. ": item " .. p.old .. " can only " ..
                      "become another option of the same product, never another product")
        end
        -- get_product_details lists all variants: an item missing there is not one.
        if new_product == nil and ledger.fact(std.key("product", product, "name")) ~= nil then
          return deny("item " .. p.new .. " is not a variant of " ..
                      product_label(ledger, product) .. ": item " .. p.old .. " can only " ..
                      "become one of the variants get_product_details lists for it")
        end
      end
    end
    return allow()
  end,
}

rule {
  id = "retail.item_available",
  tools = item_tools,
  priority = 50,
  description = "Each new item must be available.",
  check = function(call, ledger)
    local pairs_of_items, problem = item_pairs(call)
    if pairs_of_items == nil then
      return deny(problem)
    end
    for _, p in ipairs(pairs_of_items) do
      if ledger.fact(std.key("item", p.new, "available")) == false then
        local product = ledger.fact(std.key("item", p.new, "product_id"))
        return deny("item " .. p.new .. " is not available: offer the user an available " ..
                    "option of " ..
                    (product ~= nil and product_label(ledger, tostring(product))
                     or "the same product") .. " as get_product_details lists them")
      end
    end
    return allow()
  end,
}
