// The reserve functions of the "taskledger_commands" Redis Functions
// library (its Lua source, which command_redis_functions.cc places after the
// transition functions, whose helpers it uses): tlc_reserve, tlc_reserve_lease
// and tlc_commit_reserve_lease, each also under a `2` name that keeps the
// command's decision record in a field of its own as CBOR (the `2` form of
// the commit takes it as an offset and length inside the turn bytes the same
// FCALL carries, so the decision is sent once), and
// tlc_commit_reserve_lease3, that commit guarded by the settle sent just
// before it on the same connection. The old names keep their old arguments,
// so a process of the previous release keeps working on this library, and a
// process of this release meeting an old library gets "function not found"
// and loads it again instead of sending an argument the old function would
// ignore. Calling conventions: docs/commands.md.
#include <string_view>

#include "internal/command_redis_functions.h"

namespace taskledger::internal {
namespace {

constexpr std::string_view kReserve = R"LUA(
-- Writes a new command's hash (the fields and values in `flat`, and
-- `decision` when there is one) and places it in its run's order at `seq`.
local function insert(keys, key, seq, flat, decision)
  if decision and decision ~= '' then
    flat[#flat + 1] = 'decision'
    flat[#flat + 1] = decision
  end
  redis.call('HSET', keys[1], unpack(flat))
  redis.call('ZADD', keys[3], seq, key)
end

-- Inserts the command unless it exists; returns 1 if it did not. `decision`
-- (may be nil or ''): the decision record's CBOR, kept in a field of its own
-- (the spec then has no "decision" member).
local function reserve(keys, args, decision)
  if redis.call('EXISTS', keys[1]) == 1 then return 0 end
  local seq = redis.call('HINCRBY', keys[2], 'next_seq', 1)
  local flat = {'command_key', args[1], 'spec', args[2], 'state', args[3],
                'seq', n2s(seq), 'attempts', '0', 'fencing_token', '0', 'lease_owner', '',
                'lease_expires_ms', '0', 'created_ms', args[4], 'updated_ms', args[4]}
  insert(keys, args[1], seq, flat, decision)
  return 1
end

-- A new command reserved already leased: what reserve and then the lease
-- transition would write, as one HSET (the same fields and values:
-- tests/commands/command_redis_fused_test.cc), and the hash's fields and
-- values, without reading it (and its spec) back.
-- REQUIRES: the command does not exist, args[3] (its initial state) is a
-- lease source, and owner and lease_ms passed the lease's own checks.
-- `short`: the answer leaves out what the caller sent (command_key, spec,
-- decision): the fields from state to updated_ms.
local function reserve_leased(keys, args, lease_now, owner, lease_ms, decision, short)
  local seq = redis.call('HINCRBY', keys[2], 'next_seq', 1)
  local now = tonumber(lease_now)
  local flat = {'command_key', args[1], 'spec', args[2], 'state', TARGET['lease'],
                'seq', n2s(seq), 'attempts', '1', 'fencing_token', '1', 'lease_owner', owner,
                'lease_expires_ms', n2s(now + tonumber(lease_ms)), 'created_ms', args[4],
                'updated_ms', n2s(now)}
  insert(keys, args[1], seq, flat, decision)
  if short then return {unpack(flat, 5, 22)} end
  return flat
end

-- The functions below come twice: under their 0.1 names with the ARGV they
-- had (a process of an earlier release keeps working while this library is
-- loaded), and under names ending in 2 whose last argument(s) carry the
-- decision record apart from the spec. A process of this release calling a
-- name ending in 2 on a server that an earlier release loaded its library
-- onto gets "function not found" and loads this one (never an ARGV dropped).

-- KEYS = {command hash, run meta, run order}; ARGV = {command_key, spec_json, state, now_ms}
-- (tlc_reserve2: then {decision CBOR or ''}).
-- Returns {created (0|1), HGETALL of the command}.
local function reserve_fn(keys, args, decision)
  local created = reserve(keys, args, decision)
  return {created, redis.call('HGETALL', keys[1])}
end
redis.register_function('tlc_reserve', function(keys, args) return reserve_fn(keys, args) end)
redis.register_function('tlc_reserve2', function(keys, args)
  return reserve_fn(keys, args, args[5])
end)

-- tlc_reserve, then the lease transition if the command (new or found) is in
-- one of its source states: one round trip for a write's reserve and lease.
-- ARGV = tlc_reserve's, then {lease_now_ms, owner, lease_ms} (tlc_reserve_lease2:
-- then {decision CBOR or ''}).
-- Returns {created (0|1), HGETALL of the command, leased (0|1)}; tlc_reserve_lease2
-- answers a command it created leased with its fields from state on only.
local function reserve_lease_fn(keys, args, decision, short)
  -- The lease's own guards first: a refused call writes nothing.
  if args[6] == '' then return fail('TLARG', 'lease needs an owner') end
  if tonumber(args[7]) <= 0 then return fail('TLARG', 'lease needs a positive duration') end
  local cmd = keys[1]
  if SOURCES['lease'][args[3]] and redis.call('EXISTS', cmd) == 0 then
    return {1, reserve_leased(keys, args, args[5], args[6], args[7], decision, short), 1}
  end
  local created = reserve(keys, args, decision)
  if not SOURCES['lease'][redis.call('HGET', cmd, 'state')] then
    return {created, redis.call('HGETALL', cmd), 0}
  end
  local leased = transition('lease', {cmd, keys[2]},
                            {args[5], '0', args[6], args[7], '', '', '', '', '', '0', '0', '0',
                             '0', '0'})
  if leased.err then return leased end
  return {created, leased, 1}
end
redis.register_function('tlc_reserve_lease', function(keys, args)
  return reserve_lease_fn(keys, args)
end)
redis.register_function('tlc_reserve_lease2', function(keys, args)
  return reserve_lease_fn(keys, args, args[8], true)
end)

-- A session's write in one round trip: its write-ahead turn commit (tl_commit's
-- commit_check / commit_write, LedgerCommitLua) with tlc_reserve_lease.
-- KEYS = {turn stream, command hash, run meta, run order} (one hash tag).
-- ARGV = {base, retention, turn, snapshot or '', then tlc_reserve_lease's ARGV}
-- (tlc_commit_reserve_lease2: then {decision CBOR or '', at, length}: with an
-- `at`, the decision is the `length` bytes of the turn from offset `at`, the
-- very bytes the turn keeps, sent once; then the incarnation).
-- Every check comes first: the lease's arguments, the commit's (a refusal is
-- tl_commit's error reply; nothing written), then whether the command (found,
-- or as it would be reserved) is ready for this lease: in a lease source
-- state and not approved by an operator (that approval is recorded in the
-- turn first, so the caller leases it on its own). A command that is not
-- ready gets nothing written, the turn neither. Then the turn (its XADD is
-- the first write, so a refused one leaves nothing), the reserve, the lease.
-- Returns {created (0|1), HGETALL of the command, leased (0|1), version}:
-- version 0 when the turn was not committed; a retry of a commit that had
-- landed finds its own bytes (the version, nothing appended again).
-- tlc_commit_reserve_lease2 answers a command it created leased with its
-- fields from state on only (not the spec and decision just sent), and
-- stores the `incarnation` its last argument carries when the turn creates
-- the conversation (tl_commit2's field `i`; docs/redis-keys.md, "Incarnations").
local function commit_reserve_lease_fn(keys, args, decision, short, incarnation)
  if args[10] == '' then return fail('TLARG', 'lease needs an owner') end
  if tonumber(args[11]) <= 0 then return fail('TLARG', 'lease needs a positive duration') end
  local stream, cmd = {keys[1]}, keys[2]
  local landed = commit_check(stream, args)
  if type(landed) == 'table' then return landed end
  local state = redis.call('HGET', cmd, 'state')
  if not state and not SOURCES['lease'][args[7]] then
    return fail('TLARG', 'a command reserved with its lease must start in a state it leases from')
  end
  if state and (not SOURCES['lease'][state] or (redis.call('HGET', cmd, 'approver') or '') ~= '') then
    return {0, redis.call('HGETALL', cmd), 0, landed or 0}
  end
  local version = landed
  if version == nil then
    version = commit_write(stream, args, incarnation)
    if type(version) == 'table' then return version end
  end
  local reserve_args = {args[5], args[6], args[7], args[8]}
  if not state and redis.call('EXISTS', cmd) == 0 then
    return {1, reserve_leased({cmd, keys[3], keys[4]}, reserve_args, args[9], args[10], args[11],
                              decision, short), 1, version}
  end
  local created = reserve({cmd, keys[3], keys[4]}, reserve_args, decision)
  local leased = transition('lease', {cmd, keys[3]},
                            {args[9], '0', args[10], args[11], '', '', '', '', '', '0', '0', '0',
                             '0', '0'})
  if leased.err then return leased end
  return {created, leased, 1, version}
end
redis.register_function('tlc_commit_reserve_lease', function(keys, args)
  return commit_reserve_lease_fn(keys, args)
end)
local function commit_reserve_lease2_fn(keys, args, incarnation)
  local decision = args[12]
  if args[13] ~= '' then
    local at, length = tonumber(args[13]), tonumber(args[14])
    if not at or not length or at < 0 or length <= 0 or at + length > #args[3] then
      return fail('TLARG', 'the decision is not within the turn')
    end
    decision = string.sub(args[3], at + 1, at + length)
  end
  return commit_reserve_lease_fn(keys, args, decision, true, incarnation)
end
-- ARGV[15]: the incarnation ('' or absent: none).
redis.register_function('tlc_commit_reserve_lease2', function(keys, args)
  return commit_reserve_lease2_fn(keys, args, args[15])
end)

-- tlc_commit_reserve_lease2 sent right behind the settle of the session's
-- previous write, on the same connection, before that settle's answer is
-- read (the server runs one connection's commands in order): it runs only
-- if that settle landed. KEYS = tlc_commit_reserve_lease2's, then {the
-- previous command's hash}; ARGV = its ARGV, then {the state the settle
-- leads to, the fencing token it was sent under}. Anything else (the settle
-- was fenced or refused, or the command is gone) is a TLPRE error and
-- nothing is written, the turn neither. ARGV[17]: the incarnation.
redis.register_function('tlc_commit_reserve_lease3', function(keys, args)
  -- HGET, not HMGET: the per-tenant ACL of docs/redis-keys.md allows it.
  local state = redis.call('HGET', keys[5], 'state')
  local token = redis.call('HGET', keys[5], 'fencing_token')
  if state ~= args[15] or token ~= args[16] then
    return fail('TLPRE', 'the write before (command ' ..
                tostring(redis.call('HGET', keys[5], 'command_key')) .. ') is ' ..
                tostring(state) .. ' under lease ' .. tostring(token) .. ', not ' .. args[15] ..
                ' under lease ' .. args[16] .. ': its settle did not land')
  end
  return commit_reserve_lease2_fn(keys, args, args[17])
end)

)LUA";

}  // namespace

std::string_view CommandReserveLua() { return kReserve; }

}  // namespace taskledger::internal
