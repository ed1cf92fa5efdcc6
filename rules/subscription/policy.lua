-- Subscription changes: the caller's identity must be verified by a tool
-- before any change, a subscription in its grace period cannot be
-- cancelled (a downgrade is offered instead), and a refund waits for a
-- billing operator's approval.
--
-- Ledger keys (written by extract.json):
--   conditions.identity_verified   true once verify_identity succeeded
--   constraints.grace_period_days  days left in the grace period; expires with it
--   facts.subscription_status      "active", "grace_period", "cancelled", ...

rule {
  id = "subscription.identity_verified",
  tools = {"cancel_subscription", "downgrade_subscription", "refund_subscription"},
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

rule {
  id = "subscription.refund_needs_approval",
  tools = {"refund_subscription"},
  priority = 40,
  description = "Money goes back only with a billing operator's approval.",
  check = function(call, ledger)
    return require_approval("a refund of " .. tostring(call.args.amount) ..
                            " needs a billing operator's approval")
  end,
}
