// CallView: the read-only `call` object ({id, tool, args}) rules and
// extractors receive. The proxy objects for `call` and a top-level `args`
// object are built once per sandbox and refilled per check, so a check
// allocates only the argument data itself; the fields of the previous call
// that are equal in this one (tool, arguments) are not pushed again. The
// data table behind `call.args` is kept per tool (the last kArgsTables
// tools), so a check of a tool checked before refills only the arguments
// that differ from that tool's previous call, and switching tools re-points
// the proxy instead of clearing and refilling one shared table (a retail
// check alternating two tools pushed ~3.3k instructions of arguments,
// callgrind on bench_policy --retail). Rules cannot change them (every proxy
// is read-only), so what stays in Lua is exactly what a fresh push would
// produce. Not thread-safe: one per Sandbox.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lua.hpp"
#include "taskledger/base/tool_call.h"

namespace taskledger::policy_internal {

class CallView {
 public:
  // Inside Protected(): creates the persistent proxies, and keeps the names
  // in `declared` (the pack's tool and argument names, DeclaredNames in
  // rule_runtime.h) as Lua strings ahead of any name a call brings: the
  // first kDeclaredKept of at most kNameMaxBytes, in order, duplicates once.
  void Install(lua_State* L, const std::vector<std::string>& declared);
  // Whether the name `s` is kept as a Lua string (tests).
  bool Keeps(std::string_view s) const;
  // Inside Protected(): fills the proxies with `call` and pushes `call`.
  void Push(lua_State* L, const ProposedCall& call);
  // Registry reference of the persistent `call` proxy (after Install).
  int ref() const { return call_ref_; }
  // The registry reference of the table behind `call` (after Install).
  int call_data_ref() const { return call_data_ref_; }

 private:
  // One argument of a flat object: its name, JSON type, and its value as
  // bytes (a string) or bits (a number or boolean; 0 for null).
  struct FlatArgument {
    std::string key;
    nlohmann::json::value_t type = nlohmann::json::value_t::null;
    std::string text;
    uint64_t bits = 0;
  };
  // The data table an `args` object of one tool's calls is kept in, and what
  // it holds: `filled` false until a push into it completed (a Lua error
  // part-way leaves it unknown, so the next push refills all). An object of
  // scalars (the common case) is kept flat in `flat` (flat_valid), whose
  // strings keep their capacity from call to call, so remembering it
  // allocates nothing (a JSON copy cost ~0.15 us a check, bench_policy
  // --retail); anything else is kept whole in `arguments`.
  struct ArgsTable {
    std::string tool;
    int ref = LUA_NOREF;
    bool filled = false;
    bool flat_valid = false;
    std::vector<FlatArgument> flat;
    nlohmann::json arguments;
  };
  static constexpr size_t kArgsTables = 4;

  // The kept table of `tool`, or the next one to reuse (emptied of what it
  // is known to hold: filled false, its Lua table still to be cleared).
  size_t TableFor(const std::string& tool);
  // Refills `t`'s data table with the object `arguments`. With `t.filled`
  // and `t.flat_valid` only the fields that differ are set or cleared.
  void FillArguments(lua_State* L, ArgsTable& t, const nlohmann::json& arguments);
  // Whether `arguments` push as exactly what `t` holds now.
  static bool SameArguments(const ArgsTable& t, const nlohmann::json& arguments, int max_depth);
  // Remembers `arguments` as what `t` holds.
  static void KeepArguments(ArgsTable& t, const nlohmann::json& arguments);
  // Pushes the name `s` (a tool or argument name: a pack has few) as a Lua
  // string, from a registry reference once it has been pushed before, so a
  // known name is not hashed and interned again in every check. Besides the
  // declared names (Install), the first kNamesKept other distinct names of at
  // most kNameMaxBytes are kept; others are pushed as they come. The declared
  // names come first in the search, so a client sending junk names first can
  // neither evict them nor slow their lookup.
  void PushName(lua_State* L, std::string_view s);

  struct KeptName {
    std::string text;
    int ref = LUA_NOREF;  // the Lua string, held by the registry
  };
  static constexpr size_t kNamesKept = 64;  // besides the declared ones
  static constexpr size_t kDeclaredKept = 128;
  static constexpr size_t kNameMaxBytes = 40;  // Lua's LUAI_MAXSHORTLEN
  std::vector<KeptName> names_;                // the declared names first
  size_t declared_ = 0;                        // how many of names_ are declared

  int call_data_ref_ = LUA_NOREF;  // the table behind `call`
  int call_ref_ = LUA_NOREF;       // the `call` proxy
  int args_meta_ref_ = LUA_NOREF;  // metatable of the `call.args` proxy
  int args_ref_ = LUA_NOREF;       // the `call.args` proxy
  // What the call table holds now; `pushed_` is false until a Push completed.
  bool pushed_ = false;
  std::string id_;
  std::string tool_;
  std::array<ArgsTable, kArgsTables> tables_;
  size_t next_reuse_ = 0;  // the table TableFor reuses next (round robin)
  // The table `call.args` shows (the args proxy, pointed at it), or -1 when
  // it shows something else (arguments that are not an object) or unknown.
  int installed_ = -1;
};

}  // namespace taskledger::policy_internal
