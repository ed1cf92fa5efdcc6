-- Who the conversation is for. The retail policy serves exactly one user per
-- conversation, and that user must first be authenticated: their user id must
-- have come back from find_user_id_by_email or find_user_id_by_name_zip in this
-- conversation (extract.json records each such id as the verified identifier
-- user.authenticated.<id>). A user id the user merely typed, or one read from an
-- order or a profile, authenticates nobody. Once a second user has been
-- authenticated, the conversation is no longer one user's: the ledger keeps the
-- latest turn of each lookup, so "who came first" cannot be told reliably, and
-- every write is refused rather than risk acting for the other user.
--
-- Like every retail rule that judges facts, single_user denies on evidence:
-- a fact no tool has shown yet is left to retail.facts_from_tools, which runs
-- after all rules that judge evidence, so a call that both lacks a fact and
-- breaks a rule on the facts it has is denied for what it breaks.
-- Rules are pure functions of the call and the ledger snapshot; no state.

local shared = require("shared")
local facts, users_of = shared.facts, shared.users

rule {
  id = "retail.auth_before_action",
  tools = {"*"},
  priority = 100,
  description = "Authenticate the user (find_user_id_by_email or find_user_id_by_name_zip) "
             .. "before any action, even when the user already gave a user id.",
  check = function(call, ledger)
    if facts(ledger).users == 0 then
      return deny("the user is not authenticated yet: before " .. call.tool ..
                  ", ask for their email and look it up with find_user_id_by_email " ..
                  "(or their first name, last name and zip code with find_user_id_by_name_zip)")
    end
    return allow()
  end,
}

rule {
  id = "retail.single_user",
  tools = {"*"},
  priority = 90,
  description = "Help only the authenticated user of this conversation: no action on another "
             .. "user's profile or orders.",
  check = function(call, ledger)
    local f = facts(ledger)
    if f.users == 0 then
      return deny("no user is authenticated in this conversation; authenticate the user first")
    end
    if f.users > 1 then
      return deny("this conversation has authenticated more than one user (" ..
                  table.concat(users_of(ledger), ", ") .. ") but can serve only one: no " ..
                  "change can be made in it any more; tell the user so and do not act for " ..
                  "another user")
    end
    local owner = f.user or users_of(ledger)[1]  -- nil only beside an unverified key
    local user_id = call.args.user_id
    if user_id ~= nil and user_id ~= owner then
      return deny("this conversation serves user " .. owner .. "; " .. tostring(user_id) ..
                  " is another user, and requests about other users must be declined")
    end
    -- An order nobody looked up yet is left to retail.facts_from_tools.
    if f.owner_known and f.owner ~= owner then
      return deny("order " .. f.order .. " belongs to another user, not to " .. owner ..
                  " (the user of this conversation); decline to act on it and help " ..
                  owner .. " only with their own orders")
    end
    return allow()
  end,
}
