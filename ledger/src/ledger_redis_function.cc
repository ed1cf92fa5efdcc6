// The Lua source of the "taskledger_ledger" Redis Functions library (see
// internal/ledger_redis_function.h): tl_commit, and tl_since, the read of the
// turns after a held version with the conversation's incarnation
// (docs/redis-keys.md, "Incarnations"); and the mapping of tl_commit's refusals.
//
// The stream of a conversation holds exactly the entries 0-1 .. 0-<head>,
// never deleted one by one, so XLEN (O(1)) is the head; the XADD of entry
// 0-<base+1> runs only when XLEN equals the base. XADD is called with pcall:
// a stream whose top id is above its length (an entry deleted by hand) makes
// it refuse, which is reported as TLCORRUPT rather than a script error.
#include "internal/ledger_redis_function.h"

#include <charconv>
#include <string>

#include "taskledger/ledger/redis_store.h"

namespace taskledger::internal {
namespace {

constexpr const char* kHead = "#!lua name=taskledger_ledger\n";

// The commit as local functions: commit_check (every check, nothing written)
// and commit_write (the XADD and the expiry), so that another library can run
// the checks of a commit before its own and write only once all passed.
constexpr const char* kCommitLua = R"LUA(
-- The checks of a commit, nothing written: nil when the turn is to be
-- appended, else what tl_commit answers (the version, for a retry whose first
-- attempt landed: its own bytes are there; or a refusal).
local function commit_check(keys, args)
  local key, base, turn = keys[1], tonumber(args[1]), args[3]
  if base == nil or base < 0 or turn == nil then
    return redis.error_reply('ERR tl_commit: usage: base retention turn [snapshot]')
  end
  local head = redis.call('XLEN', key)
  if head == base then return nil end
  if head > base then
    local id = string.format('0-%d', base + 1)
    local entry = redis.call('XRANGE', key, id, id)[1]
    if entry and entry[2][1] == 't' and entry[2][2] == turn then return base + 1 end
  elseif head == 0 then
    return redis.error_reply('TLGONE the conversation does not exist')
  end
  return redis.error_reply(string.format('TLCONFLICT %d', head))
end

-- Appends the turn (args[4], when present and not empty, is its snapshot)
-- and sets or clears the expiry. REQUIRES: commit_check returned nil. The
-- first entry also gets `i` = `incarnation` when one is given (tl_commit2's
-- args[5]: random bytes the writer drew), the conversation's incarnation: new
-- each time the conversation is created, so that a reader holding an earlier
-- state can tell a conversation dropped and written again from the one it
-- read (tl_since). Without one (another library's commit) there is none.
local function commit_write(keys, args, incarnation)
  local key, base = keys[1], tonumber(args[1])
  local retention, turn, snapshot = args[2], args[3], args[4]
  local id = string.format('0-%d', base + 1)
  local fields = {'t', turn}
  if snapshot and snapshot ~= '' then
    fields[#fields + 1] = 's'
    fields[#fields + 1] = snapshot
  end
  if base == 0 and incarnation and incarnation ~= '' then
    fields[#fields + 1] = 'i'
    fields[#fields + 1] = incarnation
  end
  local added = redis.pcall('XADD', key, id, unpack(fields))
  if type(added) == 'table' and added.err then
    return redis.error_reply(string.format('TLCORRUPT %d entries but XADD %s refused: %s', base, id, added.err))
  end
  if retention ~= '' then
    redis.call('PEXPIRE', key, retention)
  else
    redis.call('PERSIST', key)
  end
  return base + 1
end
)LUA";

constexpr const char* kRegister = R"LUA(
local function commit(keys, args)
  local checked = commit_check(keys, args)
  if checked ~= nil then return checked end
  return commit_write(keys, args)
end

redis.register_function('tl_commit', commit)

-- tl_commit2: tl_commit whose args[5] is the incarnation of the conversation
-- a turn 1 creates (args[4] then '' when there is no snapshot). A name of its
-- own: an older library, which would read args[4] = '' as a snapshot, answers
-- "function not found" instead, and the writer loads this one.
local function commit2(keys, args)
  local checked = commit_check(keys, args)
  if checked ~= nil then return checked end
  return commit_write(keys, args, args[5])
end

redis.register_function('tl_commit2', commit2)

-- tl_since key from count: {incarnation, XRANGE key from + COUNT count}, in
-- one atomic step: the incarnation ('' when the first entry has none, as in
-- a stream written before incarnations) is that of the very stream the
-- entries come from.
local function since(keys, args)
  local first = redis.call('XRANGE', keys[1], '0-1', '0-1')[1]
  local incarnation = ''
  if first then
    for j = 1, #first[2], 2 do
      if first[2][j] == 'i' then incarnation = first[2][j + 1] end
    end
  end
  return {incarnation, redis.call('XRANGE', keys[1], args[1], '+', 'COUNT', args[2])}
end

redis.register_function{function_name = 'tl_since', callback = since, flags = {'no-writes'}}
)LUA";

}  // namespace

const FunctionLibrary& LedgerFunctionLibrary() {
  static const FunctionLibrary library{"taskledger_ledger",
                                       std::string(kHead) + kCommitLua + kRegister};
  return library;
}

std::string_view LedgerCommitLua() { return kCommitLua; }

std::optional<uint64_t> ConflictHead(const Reply& reply) {
  constexpr std::string_view kPrefix = "TLCONFLICT ";
  if (!reply.is_error() || !std::string_view(reply.str()).starts_with(kPrefix)) return std::nullopt;
  std::string_view digits = std::string_view(reply.str()).substr(kPrefix.size());
  uint64_t head = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), head);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return head;
}

Status CommitErrorToStatus(const Reply& reply, std::string_view context) {
  const std::string& e = reply.str();
  if (std::string_view(e).starts_with("TLGONE")) {
    return Status::Conflict(std::string(context) +
                            ": the conversation does not exist (dropped or expired)");
  }
  if (std::string_view(e).starts_with("TLCORRUPT ")) {
    return Status::Corruption(std::string(context) + ": " + e.substr(10));
  }
  return ServerErrorToStatus(reply, context);
}

}  // namespace taskledger::internal
