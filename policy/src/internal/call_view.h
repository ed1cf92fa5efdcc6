// CallView: the read-only `call` object ({id, tool, args}) rules and
// extractors receive. The proxy objects for `call` and a top-level `args`
// object are built once per sandbox and refilled per check, so a check
// allocates only the argument data itself. Not thread-safe: one per Sandbox.
#pragma once

#include "lua.hpp"
#include "taskledger/policy/proposed_call.h"

namespace taskledger::policy_internal {

class CallView {
 public:
  // Inside Protected(): creates the persistent proxies.
  void Install(lua_State* L);
  // Inside Protected(): fills the proxies with `call` and pushes `call`.
  void Push(lua_State* L, const ProposedCall& call);

 private:
  int call_data_ref_ = LUA_NOREF;  // the table behind `call`
  int call_ref_ = LUA_NOREF;       // the `call` proxy
  int args_meta_ref_ = LUA_NOREF;  // metatable of the `call.args` proxy
  int args_ref_ = LUA_NOREF;       // the `call.args` proxy
};

}  // namespace taskledger::policy_internal
