// Bindings of the command ledger (write-before-execute with idempotency
// keys, outcomes, reconciliation, recovery, approvals) and of the policy
// checker on its own: taskledger.CommandLedger, CommandStore /
// MemoryCommandStore / open_command_store, Command, ToolOutcome,
// LookupResult, PolicyChecker.
//
// A CommandLedger and a PolicyChecker are each for one thread at a time (a
// concurrent second call raises FailedPrecondition); a CommandStore is shared.
// The GIL is released around store I/O and Lua; Python tool bindings run
// with it re-acquired. Python callables held by C++ live in shared_ptrs whose
// deleter takes the GIL, so C++ may copy and drop them without it.
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include <pybind11/stl.h>

#include "convert.h"
#include "objects.h"
#include "taskledger/adapters/tool_call.h"
#include "taskledger/base/clock.h"
#include "taskledger/commands/command_ledger.h"
#include "taskledger/commands/memory_command_store.h"
#include "taskledger/commands/redis_command_store.h"
#include "taskledger/policy/checker.h"

namespace taskledger::py {
namespace {

namespace py = pybind11;
using namespace py::literals;

struct PyCommandLedger {
  std::shared_ptr<CommandStore> store;
  std::unique_ptr<CommandLedger> ledger;
  std::mutex busy;
};

struct PyChecker {
  std::shared_ptr<const RulePack> pack;
  std::unique_ptr<PolicyChecker> checker;
  std::mutex busy;
};

using SharedCallable = std::shared_ptr<py::object>;

SharedCallable Hold(py::object fn) {
  return SharedCallable(new py::object(std::move(fn)), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
}

std::unique_lock<std::mutex> Enter(std::mutex& m, const char* what) {
  std::unique_lock<std::mutex> lock(m, std::try_to_lock);
  if (!lock.owns_lock()) {
    Raise(Status::FailedPrecondition(std::string("this ") + what +
                                     " is already running a call: use one per thread"));
  }
  return lock;
}

std::string Described(const py::error_already_set& e) {
  return py::str(e.type().attr("__name__")).cast<std::string>() + ": " +
         py::str(e.value()).cast<std::string>();
}

template <class F>
auto Released(F&& f) {
  py::gil_scoped_release release;
  return f();
}

std::string Code(const Command& c) { return std::string(CommandStateName(c.state)); }

}  // namespace

void RegisterCommands(py::module_& m) {
  py::class_<Command>(m, "Command", "The durable record of one environment-changing call.")
      .def_property_readonly("tenant", [](const Command& c) { return c.run.tenant; })
      .def_property_readonly("run", [](const Command& c) { return c.run.run; })
      .def_readonly("seq", &Command::seq)
      .def_readonly("command_key", &Command::command_key)
      .def_readonly("idempotency_key", &Command::idempotency_key,
                    "Hand this to the external system so a retried call is deduplicated.")
      .def_readonly("step", &Command::step)
      .def_property_readonly("tool", [](const Command& c) { return c.call.tool; })
      .def_readonly("target", &Command::target)
      .def_property_readonly(
          "call_id", [](const Command& c) { return c.call.id; },
          "The id of the tool call that reserved it; empty for a command no tool call "
          "proposed, or one reserved before 0.2.")
      .def_property_readonly("arguments",
                             [](const Command& c) { return FromJson(c.call.arguments); })
      .def_property_readonly("state", &Code,
                             "pending, blocked, approved, leased, succeeded, failed, uncertain "
                             "or cancelled.")
      .def_readonly("attempts", &Command::attempts)
      .def_readonly("fencing_token", &Command::fencing_token)
      .def_readonly("last_error", &Command::last_error)
      .def_readonly("external_id", &Command::external_id)
      .def_property_readonly("evidence", [](const Command& c) { return FromJson(c.evidence); })
      .def_readonly("escalated", &Command::escalated)
      .def("to_dict", [](const Command& c) { return FromJson(EncodeCommand(c)); })
      .def("__repr__", [](const Command& c) {
        return "<taskledger.Command " + c.command_key + " " + Code(c) + ">";
      });

  py::class_<ToolOutcome>(m, "ToolOutcome", "What a bound tool's call returns.")
      .def_static(
          "succeeded",
          [](const std::string& external_id, py::handle evidence) {
            return ToolOutcome::Succeeded(external_id, ToJson(evidence, "evidence"));
          },
          "external_id"_a, "evidence"_a)
      .def_static("failed", &ToolOutcome::Failed, "error"_a, "A definite refusal.")
      .def_static("ambiguous", &ToolOutcome::Ambiguous, "error"_a,
                  "It may or may not have taken effect (timeout, dropped connection).");

  py::class_<LookupResult>(m, "LookupResult", "What a bound tool's lookup returns.")
      .def_static(
          "found",
          [](const std::string& external_id, py::handle evidence) {
            return LookupResult::Found(external_id, ToJson(evidence, "evidence"));
          },
          "external_id"_a, "evidence"_a)
      .def_static("not_found", &LookupResult::NotFound)
      .def_static("unknown", &LookupResult::Unknown, "error"_a);

  py::class_<PyCommandStore>(m, "CommandStore", "Where commands live; thread-safe, shareable.")
      .def(
          "get",
          [](PyCommandStore& s, const std::string& run, const std::string& key,
             const std::string& tenant) {
            return Unwrap(Released([&] { return s.store->Get(RunId{tenant, run}, key); }));
          },
          "run"_a, "command_key"_a, py::kw_only(), "tenant"_a = "default")
      .def(
          "list_commands",
          [](PyCommandStore& s, const std::string& run, const std::string& tenant) {
            return Unwrap(Released([&] { return s.store->ListCommands(RunId{tenant, run}); }));
          },
          "run"_a, py::kw_only(), "tenant"_a = "default");
  m.def("MemoryCommandStore", [] { return PyCommandStore{NewMemoryCommandStore()}; });
  m.def(
      "open_command_store",
      [](const std::string& url) {
        if (url == "memory" || url.empty()) return PyCommandStore{NewMemoryCommandStore()};
        RedisOptions o;
        o.url = url;
        return PyCommandStore{Unwrap(Released([&] { return OpenRedisCommandStore(o); }))};
      },
      "url"_a, "\"memory\" or a redis:// / unix:// URL.");

  py::class_<PyCommandLedger>(m, "CommandLedger",
                              "Write-before-execute for environment-changing calls. One per "
                              "worker thread; any number may share a CommandStore.")
      .def(py::init([](PyCommandStore& store, const std::string& worker_id, int64_t lease_ms,
                       uint32_t max_attempts) {
             auto l = std::make_unique<PyCommandLedger>();
             l->store = store.store;
             CommandLedgerOptions o;
             o.worker_id = worker_id;
             o.lease_ms = lease_ms;
             o.max_attempts = max_attempts;
             l->ledger = std::make_unique<CommandLedger>(*l->store, SystemClock(), o);
             return l;
           }),
           "store"_a, py::kw_only(), "worker_id"_a = "worker", "lease_ms"_a = 30000,
           "max_attempts"_a = 3)
      .def(
          "bind",
          [](PyCommandLedger& l, const std::string& tool, py::function call, py::function lookup) {
            auto lock = Enter(l.busy, "CommandLedger");
            SharedCallable c = Hold(std::move(call));
            SharedCallable k = Hold(std::move(lookup));
            ToolBinding b;
            b.call = [c](const Command& command) -> ToolOutcome {
              py::gil_scoped_acquire gil;
              try {
                return (*c)(command).cast<ToolOutcome>();
              } catch (py::error_already_set& e) {
                return ToolOutcome::Ambiguous("the tool raised " + Described(e));
              } catch (py::cast_error&) {
                return ToolOutcome::Ambiguous("the tool did not return a ToolOutcome");
              }
            };
            b.lookup = [k](const Command& command) -> LookupResult {
              py::gil_scoped_acquire gil;
              try {
                return (*k)(command).cast<LookupResult>();
              } catch (py::error_already_set& e) {
                return LookupResult::Unknown("the lookup raised " + Described(e));
              } catch (py::cast_error&) {
                return LookupResult::Unknown("the lookup did not return a LookupResult");
              }
            };
            l.ledger->Bind(tool, std::move(b));
          },
          "tool"_a, "call"_a, "lookup"_a,
          "call(command) -> ToolOutcome performs the side effect with command.idempotency_key; "
          "lookup(command) -> LookupResult finds it after an ambiguous outcome. An exception "
          "from call counts as ambiguous, from lookup as unknown.")
      .def(
          "reserve",
          [](PyCommandLedger& l, const std::string& run, const std::string& step,
             const std::string& tool, const std::string& target, py::handle arguments,
             const std::string& tenant, bool requires_approval, bool execute) {
            CommandSpec spec;
            spec.run = RunId{tenant, run};
            spec.step = step;
            spec.call.tool = tool;
            spec.target = target;
            if (!arguments.is_none())
              spec.call.arguments = ToJson(arguments, "arguments", kMaxArgumentDepth);
            spec.requires_approval = requires_approval;
            auto lock = Enter(l.busy, "CommandLedger");
            return Unwrap(
                Released([&] { return execute ? l.ledger->Run(spec) : l.ledger->Reserve(spec); }));
          },
          py::kw_only(), "run"_a, "step"_a, "tool"_a, "target"_a = "", "arguments"_a = py::none(),
          "tenant"_a = "default", "requires_approval"_a = false, "execute"_a = false,
          "Reserves the command (the same logical call returns the existing record); with "
          "execute=True also runs it (CommandLedger.Run).")
      .def(
          "execute",
          [](PyCommandLedger& l, const std::string& run, const std::string& key,
             const std::string& tenant) {
            auto lock = Enter(l.busy, "CommandLedger");
            return Unwrap(Released([&] { return l.ledger->Execute(RunId{tenant, run}, key); }));
          },
          "run"_a, "command_key"_a, py::kw_only(), "tenant"_a = "default")
      .def(
          "reconcile",
          [](PyCommandLedger& l, const std::string& run, const std::string& key,
             const std::string& tenant) {
            auto lock = Enter(l.busy, "CommandLedger");
            return Unwrap(Released([&] { return l.ledger->Reconcile(RunId{tenant, run}, key); }));
          },
          "run"_a, "command_key"_a, py::kw_only(), "tenant"_a = "default")
      .def(
          "recover",
          [](PyCommandLedger& l, const std::string& run, const std::string& tenant) {
            auto lock = Enter(l.busy, "CommandLedger");
            RecoveryReport r = Unwrap(Released([&] {
              return l.ledger->Recover(RunId{tenant, run});
            }));
            py::dict d;
            d["done"] = r.done;
            d["expired_leases"] = r.expired_leases;
            d["reconciled"] = r.reconciled;
            d["released"] = r.released;
            d["escalated"] = r.escalated;
            d["still_uncertain"] = r.still_uncertain;
            d["awaiting_human"] = r.awaiting_human;
            d["ready"] = r.ready;
            d["leased_elsewhere"] = r.leased_elsewhere;
            return d;
          },
          "run"_a, py::kw_only(), "tenant"_a = "default", "The startup guard (a dict report).")
      .def(
          "approve",
          [](PyCommandLedger& l, const std::string& run, const std::string& key,
             const std::string& actor, const std::string& reason, const std::string& tenant) {
            auto lock = Enter(l.busy, "CommandLedger");
            return Unwrap(Released([&] {
              return l.ledger->Approve(RunId{tenant, run}, key, actor, reason);
            }));
          },
          "run"_a, "command_key"_a, py::kw_only(), "actor"_a, "reason"_a, "tenant"_a = "default")
      .def(
          "deny",
          [](PyCommandLedger& l, const std::string& run, const std::string& key,
             const std::string& actor, const std::string& reason, const std::string& tenant) {
            auto lock = Enter(l.busy, "CommandLedger");
            return Unwrap(Released([&] {
              return l.ledger->Deny(RunId{tenant, run}, key, actor, reason);
            }));
          },
          "run"_a, "command_key"_a, py::kw_only(), "actor"_a, "reason"_a, "tenant"_a = "default",
          "A human refuses a blocked command: it is cancelled with the reason.")
      .def(
          "cancel",
          [](PyCommandLedger& l, const std::string& run, const std::string& key,
             const std::string& actor, const std::string& reason, const std::string& tenant) {
            auto lock = Enter(l.busy, "CommandLedger");
            return Unwrap(Released([&] {
              return l.ledger->Cancel(RunId{tenant, run}, key, actor, reason);
            }));
          },
          "run"_a, "command_key"_a, py::kw_only(), "actor"_a, "reason"_a, "tenant"_a = "default");

  py::class_<PyChecker>(m, "PolicyChecker",
                        "A pack's rules on their own (a sandboxed Lua state). One per thread.")
      .def(py::init([](const PyPack& pack) {
             auto c = std::make_unique<PyChecker>();
             c->pack = pack.pack;
             c->checker = Unwrap(Released([&] { return PolicyChecker::Create(pack.pack); }));
             return c;
           }),
           "pack"_a)
      .def(
          "check",
          [](PyChecker& c, const ProposedCall& call, std::optional<PyState> state,
             std::optional<int64_t> now_ms) {
            static const LedgerState kEmpty;
            auto lock = Enter(c.busy, "PolicyChecker");
            const LedgerState& s = state ? *state->state : kEmpty;
            PolicyDecision d;
            Status resolved;
            {
              py::gil_scoped_release release;
              d = c.checker->Check(call, s, ViewKey{}, now_ms.value_or(SystemClock().NowMs()));
              // Each rule's reads with their evidence, as a session records them.
              resolved = c.checker->ResolveReads(d, s);
            }
            Check(resolved);
            return d;
          },
          "call"_a, "state"_a = py::none(), "now_ms"_a = py::none(),
          "Decides `call` (a taskledger.Call) against `state` (default: empty); each rule's "
          "`reads` names the entries it read. Never raises for a failing rule: that is a deny.");
}

}  // namespace taskledger::py
