// The parts of a Sandbox's setup that live outside sandbox.cc: the library
// set rules see (sandbox_library.cc) and the verdict functions
// (verdicts.cc). Called once, from Sandbox::Setup, inside Protected(), with
// the real globals table at stack index `g`. Not thread-safe, like the
// lua_State they work on.
#pragma once

#include "lua.hpp"

namespace taskledger::lua {

// Opens the base, string, table, math and utf8 libraries into the globals
// table at `g` (with what rules may not use removed and the pattern
// functions guarded). Leaves the stack at height `g`.
void InstallLibraries(lua_State* L, int g);

// Defines allow, deny, require_approval and confirm in the globals table at
// `g` and records the one allow() value in the Sandbox. Leaves the stack as
// it found it.
void InstallVerdicts(lua_State* L, int g);

}  // namespace taskledger::lua
