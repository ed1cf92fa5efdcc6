-- Subscription changes: the caller's identity must be verified by a tool
-- before any change, and a subscription in its grace period cannot be
-- cancelled (a downgrade is offered instead).
--
-- Ledger keys (written by extract.json):
--   conditions.identity_verified   true once verify_identity succeeded
--   constraints.grace_period_days  days left in the grace period; expires with it
--   facts.subscription_status      "active", "grace_period", "cancelled", ...

rule {
  id = "subscription.identity_verified",
  tools = {"cancel_subscription", "downgrade_subscription"},
  priority = 100,
  description = "Every change to a subscription needs the customer's identity verified by verify_identity.",
  check = function(call, ledger)
    if ledger.condition("identity_verified") == true
        and ledger.verified("condition", "identity_verified") then
      return allow()
    end
    return deny("the customer's identity has not been verified; call verify_identity first, " ..
                "then retry " .. call.tool)
  end,
}

rule {
  id = "subscription.no_cancel_in_grace_period",
  tools = {"cancel_subscription"},
  priority = 50,
  description = "A subscription in its grace period cannot be cancelled; offer a downgrade instead.",
  check = function(call, ledger)
    local days = ledger.constraint("grace_period_days")
    if days == nil then
      return allow()
    end
    return deny("the subscription is in its grace period (" .. tostring(days) ..
                " days left) and cannot be cancelled now; offer the customer " ..
                "downgrade_subscription instead, or cancel after the grace period ends")
  end,
}
