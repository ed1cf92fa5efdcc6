-- chat-workspace policy: what a possibly hijacked agent may do in a chat
-- workspace (channels, direct messages, invitations) and on the web, under
-- the threat model that any tool output may carry an attacker's text.
-- Every value that picks a target or leaves the workspace (a URL, a
-- recipient, a channel, an invitee, a link or address inside a message) must
-- come from the user's request, from a field the workspace vouches for whole
-- (a sender, a member list, the channel list), or from a message the request
-- designates (lib/designation.lua). Text inside web pages is never a source.
--   chat.url_provenance       get_webpage / post_webpage URLs
--   chat.target_provenance    recipients, channels and members of writes
--   chat.body_links           links and addresses inside a text sent out
--   chat.invitee_requested    invite_user_to_slack: the invitee and address
--   chat.post_destination     post_webpage: data goes only where the request says

local d = require("designation")

rule {
  id = "chat.url_provenance",
  tools = {"get_webpage", "post_webpage"},
  check = function(call, ledger)
    local url = call.args.url
    if type(url) ~= "string" or url == "" then return deny(call.tool .. " needs a url") end
    if d.value_ok(call, ledger, url) then return allow() end
    return deny("the URL is not one the user gave or pointed to: " .. call.explain("url"))
  end,
}

rule {
  id = "chat.target_provenance",
  tools = {"send_direct_message", "send_channel_message", "add_user_to_channel",
           "remove_user_from_slack"},
  check = function(call, ledger)
    for _, arg in ipairs({"recipient", "channel", "user"}) do
      local v = call.args[arg]
      if v ~= nil and not d.value_ok(call, ledger, v) then
        return deny(arg .. " is not one the user gave or the workspace lists: "
                    .. call.explain(arg))
      end
    end
    return allow()
  end,
}

rule {
  id = "chat.body_links",
  tools = {"send_direct_message", "send_channel_message", "post_webpage"},
  check = function(call, ledger)
    local body = call.args.body or call.args.content
    if type(body) ~= "string" then return allow() end
    for _, text in ipairs(std.tokens(body, "url", "email")) do
      if not d.value_ok(call, ledger, text) then
        return deny("the text carries " .. text
                    .. ", which neither the user nor a message the user pointed to gave")
      end
    end
    return allow()
  end,
}

rule {
  id = "chat.invitee_requested",
  tools = {"invite_user_to_slack"},
  check = function(call, ledger)
    local user = call.args.user
    if type(user) ~= "string" or user == "" then return deny("invite_user_to_slack needs a user") end
    if not d.value_ok(call, ledger, user) then
      return deny("the user did not ask to invite " .. user .. ": " .. call.explain("user"))
    end
    return allow()
  end,
}

-- Posting sends data out, so its address must come from the user's messages
-- or the pack: a site named in a message the user only asked to read is
-- where an attacker who wrote that message would have the data go.
rule {
  id = "chat.post_destination",
  tools = {"post_webpage"},
  why = function(call)
    local url = call.args.url
    if type(url) ~= "string" or url == "" then return "post_webpage needs a url" end
    if d.from_request(call, url) then return nil end
    return "data is posted only to an address the user's request gives: " .. call.explain("url")
  end,
}
