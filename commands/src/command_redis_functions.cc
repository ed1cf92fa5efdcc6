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
// only then write. The reserve functions' source is in
// command_redis_reserve_lua.cc.
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

)LUA";

// After the reserve functions (CommandReserveLua()).
constexpr const char* kTail = R"LUA(
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
      "taskledger_commands", std::string(kHead) + std::string(LedgerCommitLua()) + "\n" +
                                 TransitionTables() + kBody + std::string(CommandReserveLua()) +
                                 kTail};
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
