-- chat-workspace designation: which workspace messages the user's request
-- points to, so that a value (a link, a name, an address) taken from one of
-- them may decide a call while the same kind of value from a message around
-- it may not. The request is the user's messages plus the pages fetched at an
-- address a user message gave (a to-do list the user pointed to).
-- A message is designated, most specific first:
--   1. by its sender, when the request names a member as an author ("the
--      article Bob posted", "the message from Bob": a name right after from/by
--      or right before posted/wrote/sent/said/shared/mentioned/asked); then
--      only those senders' messages;
--   2. else by a sentence sharing a content word with the request ("a great
--      restaurant near the office"); then only the matching sentences;
--   3. else by its channel, when the request names the channel ("all the
--      websites posted to 'general'"): the whole message.
-- The rules above are the native call.designated (docs/rule-api.md, "Intent
-- binding"); this file names the workspace's message tools and fields and
-- adds the pages to the request. Text inside web pages is never a source of
-- a value.

local M = {}

local function from_user(call, value)
  for _, s in ipairs(call.sources_of(value)) do
    if s.kind == "user" then return true end
  end
  return false
end

-- The pages fetched at an address a user message gave: with the user's
-- messages (which call.designated reads itself) they are the request.
function M.pages(call, ledger)
  local out = {}
  for _, c in ipairs(ledger.recorded_calls("get_webpage", 50)) do
    local url = c.args and c.args.url
    if c.outcome == "ok" and type(url) == "string" and from_user(call, url) then
      local page = ledger.fact("page." .. std.escape(url))
      if type(page) == "string" then out[#out + 1] = page end
    end
  end
  return out
end

-- True when value sits in a message record the request designates: the
-- native call.designated (docs/rule-api.md, "Intent binding") over the
-- message tools, a message's body, sender (author) and recipient (channel).
function M.in_designated_message(call, ledger, value)
  return call.designated(value, {tools = {"read_channel_messages", "read_inbox"},
                                 text = "body", author = "sender", place = "recipient",
                                 request = M.pages(call, ledger)})
end

-- True when the user's messages or the pack give value itself. A message the
-- request designates is not enough (the user asked to read it, not to send
-- anything where it says), and text inside web pages is never a source.
function M.from_request(call, value)
  for _, s in ipairs(call.sources_of(value)) do
    if s.kind == "user" or s.kind == "constant" then return true end
  end
  return false
end

-- Whether value may decide a target: a user message gave it, a trusted field
-- holds it whole, or it sits in a designated message.
function M.value_ok(call, ledger, value)
  for _, s in ipairs(call.sources_of(value)) do
    if s.kind == "user" or (s.trusted and not s.token) then return true end
  end
  return M.in_designated_message(call, ledger, value)
end

return M
