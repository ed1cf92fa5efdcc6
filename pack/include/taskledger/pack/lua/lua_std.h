// The rule API's `std` table (docs/rule-api.md, "std"): helpers written in
// Lua and run inside the pack's sandbox, so they are metered like the rules.
// Shared with policy/, not installed. Not thread-safe: one per Sandbox.
#pragma once

#include "lua.hpp"
#include "taskledger/pack/lua/sandbox.h"

namespace taskledger::lua {

// Registry field holding std's private hooks table.
inline constexpr const char* kStdHooks = "taskledger.std_hooks";

// Inside Protected(), before the pack's files run: defines the global `std`
// (which a pack may replace with its own, as 0.1 packs could declare it).
void InstallStd(Sandbox& box, lua_State* L);
// Inside Protected(): makes the function at the top (popped) what std.now()
// calls; it returns the decision's clock in ms since the epoch.
void SetStdClock(lua_State* L);
// Inside Protected(): sets std's native text helpers (std.tokens,
// std.contains_word, std.normalize; lua_std_text.cc) on the table at the top.
void AddStdTextHooks(lua_State* L);

}  // namespace taskledger::lua
