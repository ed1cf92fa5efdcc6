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

local rule_of, authenticated_names = require("shared").rule, require("shared").authenticated_names

rule_of("retail.auth_before_action", {"*"}, 100,
  "Authenticate the user by email or name and zip before any action, even given a user id.",
  function(call, _, f)
    return f.users == 0 and "the user is not authenticated yet: before " .. call.tool .. ", ask "
      .. "for their email and look it up with find_user_id_by_email (or their first name, last "
      .. "name and zip code with find_user_id_by_name_zip)" or nil
  end)

rule_of("retail.single_user", {"*"}, 90,
  "Help only the conversation's authenticated user: not another user's profile or orders.",
  function(call, ledger, f)
    -- No user (f.users == 0) never reaches this rule: retail.auth_before_action,
    -- on the same calls and earlier, denies.
    local user, user_id = f.user, call.args.user_id
    if f.users > 1 then
      return "this conversation has authenticated more than one user ("
        .. authenticated_names(ledger) .. ") but can serve only one: no change can be made in it "
        .. "any more; tell the user so and do not act for another user"
    elseif user_id ~= nil and user_id ~= user then
      return "this conversation serves user " .. user .. "; " .. tostring(user_id) .. " is "
        .. "another user, and requests about other users must be declined"
    elseif f.owner_known and f.owner ~= user then  -- an order nobody looked up: facts_from_tools
      return "order " .. f.order .. " belongs to another user, not to " .. user .. " (the user "
        .. "of this conversation); decline to act on it and help " .. user .. " only with "
        .. "their own orders"
    end
  end)
