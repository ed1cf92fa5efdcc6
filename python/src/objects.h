// The Python-facing wrapper types of taskledger._core that more than one
// binding file uses: stores, rule packs and immutable ledger states, each
// holding a shared_ptr so Python objects keep what they point to alive.
//
// A PyStore is shared between threads (the C++ stores are thread-safe); a
// PyState and a PyPack are immutable. Register* functions run once at import.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <pybind11/pybind11.h>

#include "taskledger/base/tool_call.h"
#include "taskledger/commands/command_store.h"
#include "taskledger/ledger/state.h"
#include "taskledger/ledger/store.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/decision.h"

namespace taskledger::py {

struct PyStore {
  std::shared_ptr<Store> store;
};

// Shared by the command ledger (commands.cc) and sessions that write through it.
struct PyCommandStore {
  std::shared_ptr<CommandStore> store;
};

struct PyPack {
  std::shared_ptr<const RulePack> pack;
};

// One version of a conversation (or the working state of a session).
struct PyState {
  std::shared_ptr<const LedgerState> state;
};

// One committed (or staged) turn record.
struct PyTurn {
  TurnRecord turn;
};

// A ProposedCall from Python arguments (str id and tool, dict arguments at
// most kMaxArgumentDepth deep); raises InvalidArgument otherwise.
ProposedCall MakeCall(pybind11::handle call_id, pybind11::handle tool, pybind11::handle arguments);

// Renders `state` as the task-state block, keeping out what `pack`'s
// pack.json "render" marks internal or redacts (no pack: everything renders);
// raises on a bad format, budget or render section.
std::string RenderState(const LedgerState& state, const std::string& format, size_t max_chars,
                        bool include_provenance, std::optional<int64_t> now_ms,
                        const RulePack* pack);

void RegisterLedger(pybind11::module_& m);          // Store, State, Entry, Turn, RulePack
void RegisterDecisions(pybind11::module_& m);       // Call, RuleEvaluation, Decision
void RegisterLedgerView(pybind11::module_& m);      // Ledger (a session's ledger, read-only)
void RegisterSession(pybind11::module_& m);         // Session, CallResult, SessionOptions
void RegisterSessionJournal(pybind11::module_& m);  // Session.journaled and friends
void RegisterReplay(pybind11::module_& m);          // replay()
void RegisterAdapters(pybind11::module_& m);        // openai_chat, openai_responses, anthropic, mcp
void RegisterCommands(pybind11::module_& m);        // CommandLedger, PolicyChecker

}  // namespace taskledger::py
