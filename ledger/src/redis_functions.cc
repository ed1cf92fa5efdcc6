// Source of the `taskledger` Redis Functions library (see
// internal/redis_functions.h for the calling convention and
// docs/redis-keys.md for the protocol). Versions travel as decimal strings
// and are only compared as strings or converted for loop bounds, so no
// float formatting of Lua numbers ever reaches a key or field name.
#include "internal/redis_functions.h"

namespace taskledger::internal {
namespace {

constexpr const char* kSource = R"LUA(#!lua name=taskledger

-- KEYS: 1 head, 2 turns, 3 snaps, 4 snapidx.

-- Moves the head to next_version and gives every key the same lifetime.
local function advance_head(keys, next_version, retention)
  if retention ~= '0' then
    redis.call('SET', keys[1], next_version, 'PX', retention)
    redis.call('PEXPIRE', keys[2], retention)
    if redis.call('PEXPIRE', keys[3], retention) == 1 then
      redis.call('PEXPIRE', keys[4], retention)
    end
  else
    redis.call('SET', keys[1], next_version)
    -- Written earlier by a store with retention: keep every key, not some.
    if redis.call('PTTL', keys[2]) >= 0 then
      redis.call('PERSIST', keys[2])
      redis.call('PERSIST', keys[3])
      redis.call('PERSIST', keys[4])
    end
  end
end

local function commit(keys, args)
  local base, next_version, turn, snapshot, retention = args[1], args[2], args[3], args[4], args[5]
  local head = redis.call('GET', keys[1]) or '0'
  if head ~= base then
    -- A retry whose first attempt landed before the connection dropped:
    -- the head is exactly this turn and holds exactly this payload.
    if head == next_version and redis.call('HGET', keys[2], next_version) == turn then
      return 0
    end
    return redis.error_reply('CONFLICT ' .. head)
  end
  redis.call('HSET', keys[2], next_version, turn)
  if snapshot ~= '' then
    redis.call('HSET', keys[3], next_version, snapshot)
    redis.call('ZADD', keys[4], next_version, next_version)
  end
  advance_head(keys, next_version, retention)
  return 1
end

-- The check half of a commit whose turn payload does not pass through Lua
-- (copying a payload into Lua costs about 1.6 us per KB on the server):
-- the client sends MULTI, FCALL tl_advance, HSETNX turns next payload, EXEC.
-- A turn field above the head is debris of an attempt that never moved the
-- head (a conflict or a missing function let its HSETNX run alone); it is
-- deleted here so that the HSETNX right after writes this turn.
-- REQUIRES: the turns key exists (base >= 1), so its lifetime is set here.
local function advance(keys, args)
  local base, next_version, retention = args[1], args[2], args[3]
  local head = redis.call('GET', keys[1]) or '0'
  if head ~= base then
    return redis.error_reply('CONFLICT ' .. head)
  end
  redis.call('HDEL', keys[2], next_version)
  advance_head(keys, next_version, retention)
  return 1
end

local function read(keys, args)
  local head = redis.call('GET', keys[1]) or '0'
  local want = args[1]
  if want == '' then want = head end
  local n = tonumber(want)
  if n == nil or n > tonumber(head) then return {head} end
  local out = {head, want, '0', ''}
  local first = 1
  if n > 0 then
    local snap = redis.call('ZREVRANGEBYSCORE', keys[4], want, '-inf', 'LIMIT', 0, 1)
    if #snap > 0 then
      out[3] = snap[1]
      out[4] = redis.call('HGET', keys[3], snap[1]) or ''
      first = tonumber(snap[1]) + 1
    end
  end
  -- HMGET in chunks: unpack() of a huge table would overflow the Lua stack.
  local v = first
  while v <= n do
    local fields = {}
    while v <= n and #fields < 1000 do
      fields[#fields + 1] = string.format('%d', v)
      v = v + 1
    end
    local turns = redis.call('HMGET', keys[2], unpack(fields))
    for i = 1, #turns do out[#out + 1] = turns[i] or '' end
  end
  return out
end

redis.register_function('tl_commit', commit)
redis.register_function('tl_advance', advance)
redis.register_function{function_name = 'tl_read', callback = read, flags = {'no-writes'}}
)LUA";

}  // namespace

const FunctionLibrary& LedgerFunctionLibrary() {
  static const FunctionLibrary library{"taskledger", kSource};
  return library;
}

}  // namespace taskledger::internal
