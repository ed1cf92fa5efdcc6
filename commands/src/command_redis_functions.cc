// The Lua source of the "taskledger_commands" Redis Functions library and the
// mapping of its refusals to Status codes. The state machine's tables (which
// transition starts where, ends where, needs the fencing token) are generated
// from the C++ table in command_transition.cc when the library is first used.
// The library also holds the ledger's commit check and write
// (LedgerCommitLua: one source with tl_commit), so a session's write-ahead
// commit, reserve and lease are one FCALL (tlc_commit_reserve_lease2, which
// keeps the command's decision record as the bytes the turn holds).
// Every transition function follows the same shape as ApplyTransition: load,
// check state, check fencing token, check the transition's own guards, and
// only then write.
#include <string>
#include <string_view>

#include "internal/command_redis_functions.h"
#include "taskledger/commands/command_transition.h"
#include "taskledger/ledger/redis_store.h"

namespace taskledger::internal {
namespace {

constexpr const char* kHead = R"LUA(#!lua name=taskledger_commands

local function n2s(x) return string.format('%d', x) end
)LUA";

// After the transition tables (TransitionTables()).
constexpr const char* kBody = R"LUA(
-- The transitions that read attempts, lease_owner or lease_expires_ms.
local READS_LEASE = {lease = true, renew = true, unlease = true, expire_lease = true,
                     release = true, replay = true}

local function fail(code, msg) return redis.error_reply(code .. ' ' .. msg) end

local function num(h, field)
  local v = redis.call('HGET', h, field)
  if not v then return 0 end
  return tonumber(v)
end

local function evidence_missing(ext, ev)
  return ext == '' or ev == '' or ev == 'null' or ev == '{}' or ev == '[]' or ev == '""'
end

-- Field/value pairs for the command's one HSET, collected in `pending`; they
-- also go to `written` (when not nil). Written in order: a later pair for the
-- same field wins, as a later HSET would.
local function hset(pending, written, ...)
  local fv = {...}
  for i = 1, #fv do pending[#pending + 1] = fv[i] end
  if written then
    for i = 1, #fv do written[#written + 1] = fv[i] end
  end
end

-- One transition: every check first (same order as ApplyTransition), then the writes.
local function transition(name, keys, args)
  local cmd, meta = keys[1], keys[2]
  local now = tonumber(args[1])
  local token, owner, lease_ms = tonumber(args[2]), args[3], tonumber(args[4])
  local ext, ev, err, actor, reason = args[5], args[6], args[7], args[8], args[9]
  local max_attempts = tonumber(args[10])
  local r_max_cmd, r_max_run = tonumber(args[11]), tonumber(args[12])
  local r_max_win, r_win_ms = tonumber(args[13]), tonumber(args[14])

  if redis.call('EXISTS', cmd) == 0 then return fail('TLNOTFOUND', 'no such command') end
  local state = redis.call('HGET', cmd, 'state')
  if not SOURCES[name][state] then
    local ckey = redis.call('HGET', cmd, 'command_key')
    return fail('TLPRE', name .. ' needs state ' .. SOURCE_TEXT[name] .. ', command ' .. ckey ..
                ' is ' .. state)
  end
  local cur_token = num(cmd, 'fencing_token')
  if NEEDS_TOKEN[name] and token ~= cur_token then
    return fail('TLFENCED', 'fenced: token ' .. n2s(token) ..
                ' is stale, the current lease has token ' .. n2s(cur_token))
  end
  -- The lease's fields, read only by the transitions that use them.
  local attempts, lease_owner, expires = 0, '', 0
  if READS_LEASE[name] then
    attempts = num(cmd, 'attempts')
    lease_owner = redis.call('HGET', cmd, 'lease_owner') or ''
    expires = num(cmd, 'lease_expires_ms')
  end
  local run_replays, win_start, win_count = 0, 0, 0
  if name == 'lease' then
    if owner == '' then return fail('TLARG', 'lease needs an owner') end
    if lease_ms <= 0 then return fail('TLARG', 'lease needs a positive duration') end
  elseif name == 'renew' then
    if lease_ms <= 0 then return fail('TLARG', 'renew needs a positive duration') end
    if owner ~= lease_owner then return fail('TLFENCED', 'fenced: lease is held by ' .. lease_owner) end
    if now >= expires then
      return fail('TLPRE', 'renew: the lease expired at ' .. n2s(expires))
    end
  elseif name == 'succeed' or name == 'reconcile_found' then
    if evidence_missing(ext, ev) then
      return fail('TLARG', 'success needs an external id and evidence')
    end
  elseif name == 'fail' or name == 'mark_uncertain' then
    if err == '' then return fail('TLARG', name .. ' needs an error') end
  elseif name == 'expire_lease' then
    if now < expires and (owner == '' or owner ~= lease_owner) then
      return fail('TLPRE', 'expire_lease: the lease of ' .. lease_owner .. ' is live until ' ..
                  n2s(expires))
    end
  elseif name == 'release' then
    if attempts >= max_attempts then
      return fail('TLLIMIT', 'release: ' .. n2s(attempts) .. ' attempts reached the maximum of ' ..
                  n2s(max_attempts) .. '; escalate instead')
    end
  elseif name == 'escalate' or name == 'cancel' then
    if reason == '' then return fail('TLARG', name .. ' needs a reason') end
  elseif name == 'approve' or name == 'deny' then
    if actor == '' or reason == '' then
      return fail('TLARG', name .. ' needs an approver and a reason')
    end
  elseif name == 'replay' then
    if actor == '' or reason == '' then return fail('TLARG', 'replay needs an actor and a reason') end
    if attempts >= r_max_cmd then
      return fail('TLLIMIT', 'replay: command has used ' .. n2s(attempts) .. ' of ' ..
                  n2s(r_max_cmd) .. ' attempts')
    end
    run_replays = num(meta, 'replays')
    if run_replays >= r_max_run then
      return fail('TLLIMIT', 'replay: run has used ' .. n2s(run_replays) .. ' of ' ..
                  n2s(r_max_run) .. ' replays')
    end
    win_start, win_count = num(meta, 'replay_window_start_ms'), num(meta, 'replay_window_count')
    if now - win_start < r_win_ms and win_count >= r_max_win then
      return fail('TLLIMIT', 'replay: rate limit of ' .. n2s(r_max_win) .. ' per ' ..
                  n2s(r_win_ms) .. ' ms reached')
    end
  end

  -- Every check passed: write. A fenced transition asked for 'delta' answers
  -- only the fields it wrote: the caller holds the hash as its lease left it
  -- (nothing else changes a command while its lease token stands).
  local written = nil
  if args[15] == 'delta' and NEEDS_TOKEN[name] then written = {} end
  local pending = {}
  if name == 'lease' then
    hset(pending, written, 'attempts', n2s(attempts + 1), 'fencing_token', n2s(cur_token + 1),
           'lease_owner', owner, 'lease_expires_ms', n2s(now + lease_ms))
  elseif name == 'renew' then
    hset(pending, written, 'lease_expires_ms', n2s(now + lease_ms))
  elseif name == 'unlease' then
    if attempts > 0 then hset(pending, written, 'attempts', n2s(attempts - 1)) end
  elseif name == 'succeed' or name == 'reconcile_found' then
    local done = redis.call('HINCRBY', meta, 'completed_seq', 1)
    hset(pending, written, 'external_id', ext, 'evidence', ev, 'completed_seq', n2s(done))
  elseif name == 'fail' or name == 'mark_uncertain' then
    hset(pending, written, 'last_error', err)
  elseif name == 'expire_lease' then
    if err == '' then err = 'lease of ' .. lease_owner .. ' ended without an outcome' end
    hset(pending, written, 'last_error', err)
  elseif name == 'escalate' then
    hset(pending, written, 'escalated', '1', 'escalation_reason', reason)
  elseif name == 'approve' or name == 'deny' then
    hset(pending, written, 'approver', actor, 'approval_reason', reason)
  elseif name == 'cancel' then
    local text = reason
    if actor ~= '' then text = actor .. ': ' .. reason end
    hset(pending, written, 'cancel_reason', text)
  elseif name == 'replay' then
    redis.call('HINCRBY', cmd, 'replays', 1)
    hset(pending, written, 'replay_reason', actor .. ': ' .. reason)
    redis.call('HINCRBY', meta, 'replays', 1)
    if now - win_start >= r_win_ms then
      redis.call('HSET', meta, 'replay_window_start_ms', n2s(now), 'replay_window_count', '0')
    end
    redis.call('HINCRBY', meta, 'replay_window_count', 1)
  end
  if TARGET[name] ~= 'leased' then
    hset(pending, written, 'lease_owner', '', 'lease_expires_ms', '0')
  end
  hset(pending, written, 'state', TARGET[name], 'updated_ms', n2s(now))
  redis.call('HSET', cmd, unpack(pending))
  if written then return written end
  return redis.call('HGETALL', cmd)
end

-- NAMES (from TransitionTables()): only the registration API is reachable while loading.
for i = 1, #NAMES do
  local name = NAMES[i]
  redis.register_function('tlc_' .. name, function(keys, args)
    return transition(name, keys, args)
  end)
end

-- Inserts the command unless it exists; returns 1 if it did not. `decision`
-- (may be nil or ''): the decision record's CBOR, kept in a field of its own
-- (the spec then has no "decision" member).
local function reserve(keys, args, decision)
  local cmd, meta, order = keys[1], keys[2], keys[3]
  if redis.call('EXISTS', cmd) == 1 then return 0 end
  local seq = redis.call('HINCRBY', meta, 'next_seq', 1)
  local flat = {'command_key', args[1], 'spec', args[2], 'state', args[3],
                'seq', n2s(seq), 'attempts', '0', 'fencing_token', '0', 'lease_owner', '',
                'lease_expires_ms', '0', 'created_ms', args[4], 'updated_ms', args[4]}
  if decision and decision ~= '' then
    flat[#flat + 1] = 'decision'
    flat[#flat + 1] = decision
  end
  redis.call('HSET', cmd, unpack(flat))
  redis.call('ZADD', order, seq, args[1])
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
  local cmd, meta, order = keys[1], keys[2], keys[3]
  local seq = redis.call('HINCRBY', meta, 'next_seq', 1)
  local now = tonumber(lease_now)
  local flat = {'command_key', args[1], 'spec', args[2], 'state', TARGET['lease'],
                'seq', n2s(seq), 'attempts', '1', 'fencing_token', '1', 'lease_owner', owner,
                'lease_expires_ms', n2s(now + tonumber(lease_ms)), 'created_ms', args[4],
                'updated_ms', n2s(now)}
  if decision and decision ~= '' then
    flat[#flat + 1] = 'decision'
    flat[#flat + 1] = decision
  end
  redis.call('HSET', cmd, unpack(flat))
  redis.call('ZADD', order, seq, args[1])
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
-- very bytes the turn keeps, sent once).
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
-- fields from state on only (not the spec and decision just sent).
local function commit_reserve_lease_fn(keys, args, decision, short)
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
    version = commit_write(stream, args)
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
redis.register_function('tlc_commit_reserve_lease2', function(keys, args)
  local decision = args[12]
  if args[13] ~= '' then
    local at, length = tonumber(args[13]), tonumber(args[14])
    if not at or not length or at < 0 or length <= 0 or at + length > #args[3] then
      return fail('TLARG', 'the decision is not within the turn')
    end
    decision = string.sub(args[3], at + 1, at + length)
  end
  return commit_reserve_lease_fn(keys, args, decision, true)
end)

-- KEYS = {run meta}; ARGV = {to, reason, now_ms, from...}. Returns HGETALL of meta.
redis.register_function('tlc_run_status', function(keys, args)
  local meta = keys[1]
  local current = redis.call('HGET', meta, 'status') or 'RUNNING'
  local allowed = false
  for i = 4, #args do
    if args[i] == current then allowed = true end
  end
  if not allowed then
    return fail('TLPRE', 'run is ' .. current .. ', cannot become ' .. args[1])
  end
  redis.call('HSET', meta, 'status', args[1], 'reason', args[2], 'updated_ms', args[3])
  return redis.call('HGETALL', meta)
end)

-- KEYS = {journal hash}; ARGV = {position, entry_json}. Returns the stored entry.
redis.register_function('tlc_journal_put', function(keys, args)
  redis.call('HSETNX', keys[1], args[1], args[2])
  return redis.call('HGET', keys[1], args[1])
end)
)LUA";

std::string LuaString(std::string_view s) { return "'" + std::string(s) + "'"; }

// SOURCES, SOURCE_TEXT, TARGET, NEEDS_TOKEN and NAMES, written from the C++
// table of command_transition.h: the Redis functions and ApplyTransition
// cannot disagree on which transition goes from where to where.
std::string TransitionTables() {
  std::string sources = "local SOURCES = {\n", text = "local SOURCE_TEXT = {\n";
  std::string target = "local TARGET = {\n", token = "local NEEDS_TOKEN = {\n";
  std::string names = "local NAMES = {";
  for (int i = 0; i < kTransitionCount; ++i) {
    const auto t = static_cast<Transition>(i);
    const std::string key = "  [" + LuaString(TransitionName(t)) + "] = ";
    std::string from, from_text;
    for (CommandState state : TransitionSources(t)) {
      from += "[" + LuaString(CommandStateName(state)) + "] = true, ";
      from_text += (from_text.empty() ? "" : "|") + std::string(CommandStateName(state));
    }
    sources += key + "{" + from + "},\n";
    text += key + LuaString(from_text) + ",\n";
    target += key + LuaString(CommandStateName(TransitionTarget(t))) + ",\n";
    if (TransitionNeedsFencingToken(t)) token += key + "true,\n";
    names += LuaString(TransitionName(t)) + ", ";
  }
  return sources + "}\n" + text + "}\n" + target + "}\n" + token + "}\n" + names + "}\n";
}

}  // namespace

const FunctionLibrary& CommandFunctionLibrary() {
  static const FunctionLibrary library{
      "taskledger_commands",
      std::string(kHead) + std::string(LedgerCommitLua()) + "\n" + TransitionTables() + kBody};
  return library;
}

Status CommandErrorToStatus(const Reply& reply, std::string_view context) {
  const std::string& text = reply.str();
  auto starts = [&](std::string_view prefix) { return text.rfind(prefix, 0) == 0; };
  auto rest = [&](size_t n) {
    return std::string(context) + ": " + (text.size() > n ? text.substr(n) : std::string());
  };
  if (starts("TLPRE ")) return Status::FailedPrecondition(rest(6));
  if (starts("TLFENCED ")) return Status::Conflict(rest(9));
  if (starts("TLARG ")) return Status::InvalidArgument(rest(6));
  if (starts("TLLIMIT ")) return Status::LimitExceeded(rest(8));
  if (starts("TLNOTFOUND ")) return Status::NotFound(rest(11));
  return ServerErrorToStatus(reply, context);
}

}  // namespace taskledger::internal
