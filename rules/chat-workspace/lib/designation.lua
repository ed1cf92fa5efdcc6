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
-- Text inside web pages is never a source of a value.

local M = {}

local MESSAGE_TOOLS = {read_channel_messages = true, read_inbox = true}
M.MESSAGE_TOOLS = MESSAGE_TOOLS

-- Words too common to point at a passage.
local STOP = {}
for w in ("this that with from have what they them their there about which where "
          .. "when will would your you can could please into than then also been "
          .. "some such only just very more most other after before"):gmatch("%a+") do
  STOP[w] = true
end

local function from_user(call, value)
  for _, s in ipairs(call.sources_of(value)) do
    if s.kind == "user" then return true end
  end
  return false
end

-- The request texts (see the top of this file).
function M.request(call, ledger)
  local out = {}
  for _, m in ipairs(call.user_messages()) do out[#out + 1] = m.text end
  for _, c in ipairs(ledger.recorded_calls("get_webpage", 50)) do
    local url = c.args and c.args.url
    if c.outcome == "ok" and type(url) == "string" and from_user(call, url) then
      local page = ledger.fact("page." .. std.escape(url))
      if type(page) == "string" then out[#out + 1] = page end
    end
  end
  return out
end

local function named(texts, word)
  if type(word) ~= "string" or word == "" then return false end
  for _, text in ipairs(texts) do
    if std.contains_word(text, word) then return true end
  end
  return false
end
M.named = named

-- Sentences of a text: they end at . ! ? followed by white space, or at a
-- line break, so the dots inside a URL do not split one.
local function sentences(text)
  local out, start = {}, 1
  for stop in text:gmatch("()[%.!?]%s") do
    out[#out + 1] = text:sub(start, stop)
    start = stop + 1
  end
  out[#out + 1] = text:sub(start)
  local split = {}
  for _, s in ipairs(out) do
    for line in s:gmatch("[^\n]+") do split[#split + 1] = line end
  end
  return split
end

local function sentence_matches(texts, sentence)
  for word in sentence:gmatch("%a+") do
    local w = word:lower()
    if #w >= 4 and not STOP[w] and named(texts, w) then return true end
  end
  return false
end

-- True when text holds value: as a URL, address or number token in its
-- normalised form (so "WWW.Site.org/" matches "www.site.org"), or as a word.
local function holds(text, value)
  local want = std.normalize(value)
  for _, token in ipairs(std.tokens(text)) do
    if std.normalize(token) == want then return true end
  end
  return std.contains_word(text, value)
end

-- "from Bob", "by Bob", "Bob posted": the words that make a name an author.
local AUTHOR_BEFORE = {from = true, by = true}
local AUTHOR_AFTER = {posted = true, wrote = true, sent = true, said = true, shared = true,
                      mentioned = true, asked = true}

-- Senders the request names as authors: message records whose sender field
-- equals a capitalised word of the request not preceded by "to".
local function author_records(call, texts)
  local out, any = {}, false
  for _, text in ipairs(texts) do
    local words = {}
    for word in text:gmatch("[%w_%-]+") do words[#words + 1] = word end
    for i, word in ipairs(words) do
      local before, after = (words[i - 1] or ""):lower(), (words[i + 1] or ""):lower()
      if #word > 1 and word:sub(1, 1):match("%u") and (AUTHOR_BEFORE[before] or AUTHOR_AFTER[after]) then
        for _, s in ipairs(call.sources_of(word)) do
          local f = s.record and s.record.fields
          if s.kind == "tool" and MESSAGE_TOOLS[s.tool] and not s.token and f
              and f.sender ~= nil and std.normalize(f.sender) == std.normalize(word) then
            out[#out + 1] = f
            any = true
          end
        end
      end
    end
  end
  return out, any
end

-- True when value sits in a message record the request designates.
function M.in_designated_message(call, texts, value)
  local v = tostring(value)
  local authored, any = author_records(call, texts)
  if any then
    for _, f in ipairs(authored) do
      if type(f.body) == "string" and holds(f.body, v) then return true end
    end
    return false
  end
  for _, s in ipairs(call.sources_of(value)) do
    local f = s.record and s.record.fields
    if s.kind == "tool" and MESSAGE_TOOLS[s.tool] and f and type(f.body) == "string" then
      local matched_any, here = false, false
      for _, sentence in ipairs(sentences(f.body)) do
        if sentence_matches(texts, sentence) then
          matched_any = true
          if holds(sentence, v) then here = true end
        end
      end
      if here then return true end
      if not matched_any and named(texts, f.recipient) then return true end
    end
  end
  return false
end

-- Whether value may decide a target: a user message gave it, a trusted field
-- holds it whole, or it sits in a designated message.
function M.value_ok(call, ledger, value)
  for _, s in ipairs(call.sources_of(value)) do
    if s.kind == "user" or (s.trusted and not s.token) then return true end
  end
  return M.in_designated_message(call, M.request(call, ledger), value)
end

return M
