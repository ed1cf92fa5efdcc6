// The `std` table of the rule API (docs/rule-api.md, "std"): exact decimal
// money, list helpers, sets, ISO-8601 times and durations, key escaping. It is
// Lua source run in the pack's own sandbox when the sandbox is set up, so the
// helpers are metered by the same instruction, memory and pattern limits as
// the rules that call them; the few things Lua cannot do itself (key escaping,
// the decision's clock) come in through a private `hooks` table.
#include "taskledger/pack/lua/lua_std.h"

#include <cstring>
#include <string>

#include "taskledger/base/key_segment.h"
#include "taskledger/pack/lua/lua_json.h"

namespace taskledger::lua {
namespace {

const char kStdSource[] = R"lua(
local hooks = ...
local std = {}
local floor, tointeger, mtype = math.floor, math.tointeger, math.type
local sfmt, sfind, ssub, srep = string.format, string.find, string.sub, string.rep

-- Money: an exact decimal, `units` * 10^-`scale` with integer units.
local Money = {}
local MAXI = math.maxinteger
-- The amounts live in DATA (weak keys), so a money value is an empty table
-- no rule can change.
local DATA = setmetatable({}, {__mode = "k"})
local function money_new(units, scale)
  local m = setmetatable({}, Money)
  DATA[m] = {units = units, scale = scale}
  return m
end
local function is_money(v) return getmetatable(v) == "money" end
local function parse_money(s)
  local sign, int, frac = string.match(s, "^%s*([+-]?)(%d*)%.?(%d*)%s*$")
  if sign == nil or (int == "" and frac == "") or #int + #frac > 18 then
    error("std.money: '" .. s .. "' is not a decimal number", 3)
  end
  local units = tointeger(tonumber((int == "" and "0" or int) .. frac))
  if sign == "-" then units = -units end
  return money_new(units, #frac)
end
local function D(m) return DATA[m] end
local function to_money(v)
  if is_money(v) then return v end
  local t = type(v)
  if t == "string" then return parse_money(v) end
  if t == "number" then
    if mtype(v) == "integer" then return money_new(v, 0) end
    if v ~= v or v == math.huge or v == -math.huge then error("std.money: not a finite number", 3) end
    return parse_money(sfmt("%.15g", v):find("e") and sfmt("%.6f", v) or sfmt("%.15g", v))
  end
  error("std.money: expected a decimal string or a number, got " .. t, 3)
end
local function rescale(m, scale)
  local u = D(m).units
  for _ = D(m).scale + 1, scale do
    if u > MAXI // 10 or u < -(MAXI // 10) then error("std.money: amount out of range", 4) end
    u = u * 10
  end
  return u
end
local function align(a, b)
  a, b = to_money(a), to_money(b)
  local s = math.max(D(a).scale, D(b).scale)
  return rescale(a, s), rescale(b, s), s
end
local function add(x, y)
  if (y > 0 and x > MAXI - y) or (y < 0 and x < math.mininteger - y) then
    error("std.money: amount out of range", 3)
  end
  return x + y
end
Money.__metatable = "money"
hooks.seal(Money)  -- money values refuse writes: read-only proxies pass them as they are
Money.__index = function(m, k)
  if k == "number" then return D(m).units / 10 ^ D(m).scale end
  error("money has no field '" .. tostring(k) .. "' (only .number)", 2)
end
Money.__newindex = function() error("money values cannot be changed", 2) end
Money.__add = function(a, b) local x, y, s = align(a, b) return money_new(add(x, y), s) end
Money.__sub = function(a, b) local x, y, s = align(a, b) return money_new(add(x, -y), s) end
Money.__unm = function(a) return money_new(-D(a).units, D(a).scale) end
Money.__mul = function(a, b)
  if is_money(b) then a, b = b, a end
  if is_money(b) or mtype(b) ~= "integer" then
    error("std.money: money can only be multiplied by an integer", 2)
  end
  local u = D(a).units
  if b ~= 0 and (u > MAXI // math.abs(b) or u < -(MAXI // math.abs(b))) then
    error("std.money: amount out of range", 2)
  end
  return money_new(u * b, D(a).scale)
end
Money.__eq = function(a, b) local x, y = align(a, b) return x == y end
Money.__lt = function(a, b) local x, y = align(a, b) return x < y end
Money.__le = function(a, b) local x, y = align(a, b) return x <= y end
Money.__tostring = function(m)
  local u, sc = D(m).units, D(m).scale
  local neg = u < 0
  local digits = tostring(neg and -u or u)
  if sc > 0 then
    if #digits <= sc then digits = srep("0", sc - #digits + 1) .. digits end
    digits = ssub(digits, 1, #digits - sc) .. "." .. ssub(digits, -sc)
  end
  return (neg and "-" or "") .. digits
end
Money.__concat = function(a, b)
  return (is_money(a) and tostring(a) or a) .. (is_money(b) and tostring(b) or b)
end

function std.money(v) return to_money(v) end
std.is_money = is_money
function std.same(a, b)
  if is_money(a) or is_money(b) then return to_money(a) == to_money(b) end
  return a == b
end

-- Lists. `f`, when given, maps each element first.
local function each_value(list, f, fn)
  for i = 1, #list do
    local v = list[i]
    if f then v = f(v) end
    fn(v)
  end
end
function std.sum(list, f)
  local total = 0
  each_value(list, f, function(v)
    if is_money(v) or is_money(total) then
      total = to_money(total) + v
    elseif type(v) == "number" then
      total = total + v
    else
      error("std.sum: element is a " .. type(v) .. ", not a number or money", 4)
    end
  end)
  return total
end
function std.count(list, pred)
  local n = 0
  for i = 1, #list do
    if pred == nil or pred(list[i]) then n = n + 1 end
  end
  return n
end
local function extreme(list, f, better)
  local best
  each_value(list, f, function(v) if best == nil or better(v, best) then best = v end end)
  return best
end
function std.min(list, f) return extreme(list, f, function(a, b) return a < b end) end
function std.max(list, f) return extreme(list, f, function(a, b) return a > b end) end
function std.map(list, f)
  local out = {}
  for i = 1, #list do out[i] = f(list[i]) end
  return out
end
function std.filter(list, pred)
  local out = {}
  for i = 1, #list do if pred(list[i]) then out[#out + 1] = list[i] end end
  return out
end
-- The keys / values of a table (a record or call.args included), keys sorted.
function std.keys(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out, function(a, b)
    if type(a) == type(b) then return a < b end
    return type(a) == "number"
  end)
  return out
end
function std.values(t)
  local out = {}
  for _, k in ipairs(std.keys(t)) do out[#out + 1] = t[k] end
  return out
end

-- Sets over lists of scalars.
function std.set(list)
  local s = {}
  for i = 1, #list do s[list[i]] = true end
  return s
end
function std.contains(list, v)
  for i = 1, #list do if list[i] == v then return true end end
  return false
end
function std.subset(a, b)
  local sb = std.set(b)
  for i = 1, #a do if not sb[a[i]] then return false end end
  return true
end
function std.difference(a, b)
  local sb, out = std.set(b), {}
  for i = 1, #a do if not sb[a[i]] then out[#out + 1] = a[i] end end
  return out
end
function std.intersection(a, b)
  local sb, out = std.set(b), {}
  for i = 1, #a do if sb[a[i]] then out[#out + 1] = a[i] end end
  return out
end
function std.union(a, b)
  local seen, out = {}, {}
  for _, l in ipairs({a, b}) do
    for i = 1, #l do
      if not seen[l[i]] then seen[l[i]] = true; out[#out + 1] = l[i] end
    end
  end
  return out
end

-- Time: milliseconds since the Unix epoch (UTC).
local function days_from_civil(y, m, d)
  y = m <= 2 and y - 1 or y
  local era = (y >= 0 and y or y - 399) // 400
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = (153 * mp + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  return era * 146097 + doe - 719468
end
local DAYS_IN = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
function std.time(v)
  if mtype(v) == "integer" then return v end
  if type(v) ~= "string" or #v > 64 then error("std.time: expected an ISO-8601 date-time string", 2) end
  local y, mo, d, rest = string.match(v, "^(%d%d%d%d)%-(%d%d)%-(%d%d)(.*)$")
  if not y then error("std.time: '" .. v .. "' is not an ISO-8601 date (YYYY-MM-DD...)", 2) end
  y, mo, d = tointeger(tonumber(y)), tointeger(tonumber(mo)), tointeger(tonumber(d))
  local leap = (y % 4 == 0 and y % 100 ~= 0) or y % 400 == 0
  if mo < 1 or mo > 12 or d < 1 or d > DAYS_IN[mo] or (mo == 2 and d == 29 and not leap) then
    error("std.time: '" .. v .. "' is not a calendar date", 2)
  end
  local h, mi, s, ms, off = 0, 0, 0, 0, 0
  if rest ~= "" then
    local hh, mm, tail = string.match(rest, "^[T ](%d%d):(%d%d)(.*)$")
    if not hh then error("std.time: '" .. v .. "': bad time of day", 2) end
    h, mi = tointeger(tonumber(hh)), tointeger(tonumber(mm))
    local ss, t2 = string.match(tail, "^:(%d%d)(.*)$")
    if ss then s, tail = tointeger(tonumber(ss)), t2 end
    local frac, t3 = string.match(tail, "^[.,](%d+)(.*)$")
    if frac then
      ms = tointeger(tonumber(ssub(frac .. "00", 1, 3)))
      tail = t3
    end
    if tail == "Z" or tail == "z" then
      off = 0
    elseif tail ~= "" then
      local sign, oh, om = string.match(tail, "^([+-])(%d%d):?(%d%d)$")
      if not sign then error("std.time: '" .. v .. "': bad zone (use Z or +hh:mm)", 2) end
      off = (tointeger(tonumber(oh)) * 60 + tointeger(tonumber(om))) * 60000
      if sign == "-" then off = -off end
    end
    if h > 24 or mi > 59 or s > 60 or (h == 24 and (mi > 0 or s > 0 or ms > 0)) then
      error("std.time: '" .. v .. "': bad time of day", 2)
    end
  end
  return ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000 + s * 1000 + ms - off
end
function std.now() return hooks.now() end
std.second, std.minute, std.hour, std.day = 1000, 60000, 3600000, 86400000
function std.seconds(n) return floor(n * 1000) end
function std.minutes(n) return floor(n * 60000) end
function std.hours(n) return floor(n * 3600000) end
function std.days(n) return floor(n * 86400000) end
-- An ISO-8601 duration (PnW, PnDTnHnMnS; no years or months: their length varies) in ms.
local UNIT_MS = {H = 3600000, M = 60000, S = 1000}
local UNIT_RANK = {H = 1, M = 2, S = 3}
function std.duration(v)
  local function bad() error("std.duration: '" .. tostring(v) .. "' is not an ISO-8601 duration (PnW or PnDTnHnMnS)", 3) end
  if type(v) ~= "string" or #v > 64 then bad() end
  local w = string.match(v, "^P(%d+)W$")
  if w then return tointeger(tonumber(w)) * 7 * 86400000 end
  local days, rest = string.match(v, "^P(%d+)D(.*)$")
  if not days then days, rest = "0", string.match(v, "^P(T.+)$") end
  if rest == nil then bad() end
  local ms = tointeger(tonumber(days)) * 86400000
  if rest ~= "" then
    local t = string.match(rest, "^T(.+)$")
    if not t then bad() end
    local pos, rank = 1, 0
    while pos <= #t do
      local num, unit, nxt = string.match(t, "^(%d+%.?%d*)([HMS])()", pos)
      if not num or UNIT_RANK[unit] <= rank or (unit ~= "S" and sfind(num, ".", 1, true)) then bad() end
      rank = UNIT_RANK[unit]
      ms = ms + floor(tonumber(num) * UNIT_MS[unit])
      pos = nxt
    end
  end
  return ms
end
-- Milliseconds from time `t` (ms or ISO-8601) to the decision's clock.
function std.since(t) return std.now() - std.time(t) end
function std.before(a, b) return std.time(a) < std.time(b) end
function std.after(a, b) return std.time(a) > std.time(b) end

-- Keys: ids escaped as key segments (see docs/rule-api.md, "Ids in keys").
function std.escape(id) return hooks.escape(tostring(id)) end
function std.unescape(seg) return hooks.unescape(seg) end
std.key = hooks.key
-- Text, natively (see docs/rule-api.md, "Provenance"): outside the pattern budget.
std.tokens = hooks.tokens
std.contains_word = hooks.contains_word
std.normalize = hooks.normalize
return std
)lua";

int Escape(lua_State* L) {
  size_t n = 0;
  const char* s = luaL_checklstring(L, 1, &n);
  std::string out = EscapeKeySegment(std::string_view(s, n));
  lua_pushlstring(L, out.data(), out.size());
  return 1;
}

int Unescape(lua_State* L) {
  size_t n = 0;
  const char* s = luaL_checklstring(L, 1, &n);
  std::string out = UnescapeKeySegment(std::string_view(s, n));
  lua_pushlstring(L, out.data(), out.size());
  return 1;
}

// std.key(seg, ...): each argument as tostring() gives it, escaped, joined
// with '.' (so a missing argument reads as "nil" and finds nothing, as plain
// concatenation with tostring would).
int Key(lua_State* L) {
  const int n = lua_gettop(L);
  // Built in a stack buffer and pushed once: rules call this on every check,
  // so it allocates nothing for keys up to kInline bytes.
  constexpr size_t kInline = 256;
  char inline_buf[kInline];
  std::string spill;
  size_t used = 0;
  luaL_checkstack(L, n, "std.key: too many arguments");  // luaL_tolstring pushes
  auto put = [&](const char* p, size_t len) {
    if (spill.empty() && used + len <= kInline) {
      std::memcpy(inline_buf + used, p, len);
      used += len;
      return;
    }
    if (spill.empty()) spill.assign(inline_buf, used);
    spill.append(p, len);
  };
  for (int i = 1; i <= n; ++i) {
    size_t len = 0;
    const char* s = lua_type(L, i) == LUA_TSTRING ? lua_tolstring(L, i, &len)
                                                  : luaL_tolstring(L, i, &len);  // pushed, kept
    if (i > 1) put(".", 1);
    size_t from = 0;
    for (size_t k = 0; k < len; ++k) {
      if (!KeySegmentNeedsEscape(s[k])) continue;
      put(s + from, k - from);
      const std::string esc = EscapeKeySegment(std::string_view(s + k, 1));
      put(esc.data(), esc.size());
      from = k + 1;
    }
    put(s + from, len - from);
  }
  if (spill.empty()) {
    lua_pushlstring(L, inline_buf, used);
  } else {
    lua_pushlstring(L, spill.data(), spill.size());
  }
  return 1;
}

int Seal(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  MarkSealed(L, 1);
  return 0;
}

int NoClock(lua_State* L) {
  RaiseError(L, "std.now(): the decision's clock is only known while a rule checks a call");
}

}  // namespace

void InstallStd(Sandbox& box, lua_State* L) {
  lua_createtable(L, 0, 4);
  lua_pushcfunction(L, Escape);
  lua_setfield(L, -2, "escape");
  lua_pushcfunction(L, Unescape);
  lua_setfield(L, -2, "unescape");
  lua_pushcfunction(L, NoClock);
  lua_setfield(L, -2, "now");
  lua_pushcfunction(L, Key);
  lua_setfield(L, -2, "key");
  lua_pushcfunction(L, Seal);
  lua_setfield(L, -2, "seal");
  AddStdTextHooks(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, kStdHooks);
  const int hooks = lua_gettop(L);
  box.LoadChunk("std", kStdSource);
  lua_pushvalue(L, hooks);
  lua_call(L, 1, 1);
  WrapReadOnly(L, -1);
  box.DefineGlobal("std");
  box.AllowOverride("std");
  lua_pop(L, 1);  // hooks
}

void SetStdClock(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, kStdHooks);
  lua_insert(L, -2);
  lua_setfield(L, -2, "now");
  lua_pop(L, 1);
}

}  // namespace taskledger::lua
