// The Lua source of the "taskledger_ledger" Redis Functions library (see
// internal/ledger_redis_function.h) and the mapping of its refusals.
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
-- and sets or clears the expiry. REQUIRES: commit_check returned nil.
local function commit_write(keys, args)
  local key, base = keys[1], tonumber(args[1])
  local retention, turn, snapshot = args[2], args[3], args[4]
  local id = string.format('0-%d', base + 1)
  local added
  if snapshot and snapshot ~= '' then
    added = redis.pcall('XADD', key, id, 't', turn, 's', snapshot)
  else
    added = redis.pcall('XADD', key, id, 't', turn)
  end
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
