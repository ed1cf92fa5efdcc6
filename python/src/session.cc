// Bindings of the agent loop: taskledger.Session, CallResult and
// SessionOptions (the session's Ledger view is ledger_view.cc).
//
// Threads: one Session per thread, as in C++. A Session guards itself: a
// second call entering while one is in flight (another thread, or a tool
// callable calling back into its own session) raises FailedPrecondition
// instead of corrupting the turn. The GIL is released while the session checks
// policy (Lua), extracts and talks to the store; it is taken back only to run
// the Python tool callable and to convert its result.
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "convert.h"
#include "objects.h"
#include "py_session.h"
#include "taskledger/adapters/tool_call.h"
#include "taskledger/commands/command.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/session/session.h"

namespace taskledger::py {
namespace {

namespace py = pybind11;
using namespace py::literals;

// What handle_tool_call / authorize / check return.
struct PyCallResult {
  ProposedCall call;
  CallResult result;
  py::object error = py::none();  // the tool's exception, for on_error="return"
};

}  // namespace

ProposedCall MakeCall(py::handle call_id, py::handle tool, py::handle arguments) {
  ProposedCall call;
  call.id = Text(call_id, "call_id");
  call.tool = Text(tool, "tool");
  if (call.tool.empty()) RaiseInvalid("tool must not be empty");
  if (arguments.is_none()) return call;
  if (!PyDict_Check(arguments.ptr())) {
    RaiseInvalid("arguments must be a dict, not " + std::string(Py_TYPE(arguments.ptr())->tp_name));
  }
  call.arguments = ToJson(arguments, "arguments", kMaxArgumentDepth);
  return call;
}

namespace {

// The status a tool's exception is recorded with.
Status StatusOfToolError(const py::error_already_set& e, const std::string& tool) {
  std::string what = py::str(e.value()).cast<std::string>();
  std::string type = py::str(e.type().attr("__name__")).cast<std::string>();
  if (e.matches(PyExc_TimeoutError)) {
    return Status::Timeout("the tool " + tool + " did not return in time (" + what + ")");
  }
  for (int c = 1; c <= static_cast<int>(StatusCode::kInternal); ++c) {
    if (e.matches(ErrorClass(static_cast<StatusCode>(c)))) {
      return Status(static_cast<StatusCode>(c),
                    "the tool " + tool + " raised " + type + ": " + what);
    }
  }
  return Status::Internal("the tool " + tool + " raised " + type + ": " + what);
}

// The C++ executor around a Python callable; see handle_tool_call's docstring.
// A write under the command ledger hands its idempotency key to a callable
// that takes an `idempotency_key` keyword.
// `call_obj` null: the callable gets a taskledger.Call made from the call.
ContextToolExecutor PythonExecutor(const py::object& execute, const py::object* call_obj,
                                   std::optional<double> timeout,
                                   std::optional<py::error_already_set>& raised) {
  return [&execute, call_obj, timeout, &raised](const ProposedCall& call,
                                                const ToolContext& ctx) -> Result<ToolOutput> {
    py::gil_scoped_acquire gil;
    try {
      py::object arg = call_obj != nullptr ? *call_obj : py::cast(call);
      py::object fn = execute;
      if (!ctx.idempotency_key.empty()) {
        py::module_ calls = py::module_::import("taskledger._calls");
        if (calls.attr("accepts_idempotency_key")(execute).cast<bool>()) {
          fn = py::module_::import("functools")
                   .attr("partial")(execute, "idempotency_key"_a = ctx.idempotency_key);
        }
      }
      py::object out;
      if (timeout) {
        py::object runner = py::module_::import("taskledger._calls").attr("run_with_timeout");
        out = runner(fn, arg, *timeout);
      } else {
        out = fn(arg);
      }
      if (PyUnicode_Check(out.ptr())) return ToolOutput{Text(out, "the tool's return value")};
      return ToolOutput{ToJson(out, "the return value of tool " + call.tool)};
    } catch (py::error_already_set& e) {
      Status why = StatusOfToolError(e, call.tool);
      raised = std::move(e);
      if (why.code() == StatusCode::kTimeout) return why;  // uncertain for a write already
      // The tool raised: maybe after its side effect. The session records a
      // write as uncertain, a read as an error, with this status.
      throw ToolRaised(std::move(why));
    }
  };
}

// check / authorize: one of the session's decide-only calls, the GIL released
// while it runs (it evaluates Lua and may talk to the store).
PyCallResult Decide(PySession& s, CallResult (Session::*decide)(const ProposedCall&),
                    ProposedCall call) {
  PyCallResult r{std::move(call), {}};
  Busy busy(s);
  py::gil_scoped_release release;
  r.result = ((*s.session).*decide)(r.call);
  return r;
}

py::object Finish(PyCallResult&& r, std::optional<py::error_already_set>& raised,
                  const std::string& on_error) {
  if (!raised) return py::cast(std::move(r));
  if (on_error == "return") {
    r.error = raised->value();
    return py::cast(std::move(r));
  }
  // The call is recorded (outcome "error"); hand its result to the caller on
  // the exception so the model can still be told.
  py::object result = py::cast(std::move(r));
  if (PyObject_SetAttrString(raised->value().ptr(), "call_result", result.ptr()) != 0)
    PyErr_Clear();
  throw std::move(*raised);
}

void CheckOnError(const std::string& on_error) {
  if (on_error != "raise" && on_error != "return")
    RaiseInvalid("on_error must be \"raise\" or \"return\", not \"" + on_error + "\"");
}

}  // namespace

void RegisterSession(py::module_& m) {
  py::class_<PyCallResult>(m, "CallResult", "What became of one proposed call.")
      .def_property_readonly("call", [](const PyCallResult& r) { return r.call; })
      .def_property_readonly("call_id", [](const PyCallResult& r) { return r.call.id; })
      .def_property_readonly("tool", [](const PyCallResult& r) { return r.call.tool; })
      .def_property_readonly("executed", [](const PyCallResult& r) { return r.result.executed; })
      .def_property_readonly("decision", [](const PyCallResult& r) { return r.result.decision; })
      .def_property_readonly(
          "message", [](const PyCallResult& r) { return r.result.message; },
          "The tool-result content for the model: the output, or why the call did not run.")
      .def_property_readonly("is_error",
                             [](const PyCallResult& r) { return r.result.message_is_error; })
      .def_property_readonly(
          "output",
          [](const PyCallResult& r) -> py::object {
            if (!r.result.output) return py::none();
            return FromJson(r.result.output->output);
          },
          "What the tool returned (None if it did not run or raised).")
      .def_property_readonly(
          "record", [](const PyCallResult& r) { return FromJson(r.result.decision_record.Json()); },
          "The decision-log record staged into the turn.")
      .def_property_readonly(
          "idempotency_key",
          [](const PyCallResult& r) -> py::object {
            if (!r.result.command) return py::none();
            return py::str(r.result.command->idempotency_key);
          },
          "The key of the write's command (None without a command store).")
      .def_property_readonly(
          "command_state",
          [](const PyCallResult& r) -> py::object {
            if (!r.result.command) return py::none();
            return py::str(std::string(CommandStateName(r.result.command->state)));
          },
          "\"succeeded\", \"failed\", \"uncertain\", \"blocked\", ... (None without one).")
      .def_readonly("error", &PyCallResult::error,
                    "The tool's exception when on_error=\"return\", else None.")
      .def("__repr__", [](const PyCallResult& r) {
        return "<taskledger.CallResult " + r.call.id + " " + r.call.tool +
               (r.result.executed             ? " executed"
                : r.result.decision.allowed() ? " allowed"
                                              : " blocked") +
               ">";
      });

  py::class_<SessionOptions>(m, "SessionOptions", "Options of Session.open.")
      .def(py::init([](bool commit_before_write, const std::string& store_down_reads) {
             SessionOptions o;
             o.commit_before_write = commit_before_write;
             if (store_down_reads == "allow") {
               o.store_down_reads = StoreDownReads::kAllow;
             } else if (store_down_reads == "deny") {
               o.store_down_reads = StoreDownReads::kDeny;
             } else {
               RaiseInvalid("store_down_reads must be \"allow\" or \"deny\"");
             }
             return o;
           }),
           py::kw_only(), "commit_before_write"_a = true, "store_down_reads"_a = "allow")
      .def_readonly("commit_before_write", &SessionOptions::commit_before_write);

  py::class_<PySession, std::shared_ptr<PySession>>(
      m, "Session",
      "One conversation's agent loop: ledger, extraction and policy gate. One per thread.")
      .def_static(
          "open",
          [](PyStore& store, const std::string& tenant, const std::string& conversation,
             const PyPack& pack, const std::optional<SessionOptions>& options,
             const py::object& command_store, const py::object& lookup, bool journal) {
            auto s = std::make_shared<PySession>();
            s->store = store.store;
            s->pack = pack.pack;
            SessionOptions o = options.value_or(SessionOptions{});
            if (!command_store.is_none()) {
              s->command_store = command_store.cast<PyCommandStore&>().store;
              o.commands.store = s->command_store.get();
            }
            if (journal) {
              if (command_store.is_none()) RaiseInvalid("journal=True needs a command_store");
              o.commands.journal = true;
            }
            if (!lookup.is_none()) {
              if (!PyCallable_Check(lookup.ptr())) RaiseInvalid("lookup must be callable");
              if (command_store.is_none()) RaiseInvalid("lookup needs a command_store");
              auto held = std::shared_ptr<py::object>(new py::object(lookup), [](py::object* f) {
                py::gil_scoped_acquire gil;
                delete f;
              });
              o.commands.lookup = [held](const Command& c) -> LookupResult {
                py::gil_scoped_acquire gil;
                try {
                  return (*held)(c).cast<LookupResult>();
                } catch (py::error_already_set& e) {
                  return LookupResult::Unknown("the lookup raised " +
                                               py::str(e.value()).cast<std::string>());
                } catch (const py::cast_error&) {
                  return LookupResult::Unknown("the lookup did not return a LookupResult");
                }
              };
            }
            auto session = [&] {
              py::gil_scoped_release release;
              return Session::Open(*s->store, ConversationId{tenant, conversation}, s->pack,
                                   std::move(o));
            }();
            s->session = Unwrap(std::move(session));
            return s;
          },
          "store"_a, py::kw_only(), "tenant"_a = "default", "conversation"_a, "pack"_a,
          "options"_a = py::none(), "command_store"_a = py::none(), "lookup"_a = py::none(),
          "journal"_a = false,
          "Opens (or resumes at its head) a conversation. With command_store, every write is a "
          "command of the run (tenant, conversation): reserved, leased, given its idempotency key "
          "(passed to an execute callable that takes an idempotency_key keyword) and settled; "
          "lookup(command) -> LookupResult reconciles uncertain ones, also at open. journal=True "
          "records model responses and "
          "other non-deterministic values (journaled()) so a resumed loop replays them. Raises "
          "Unavailable, Timeout, Corruption, InvalidArgument.")
      .def(
          "record_user_message",
          [](PySession& s, py::handle text) {
            std::string t = Text(text, "text");
            Busy busy(s);
            Status st = [&] {
              py::gil_scoped_release release;
              return s.session->RecordUserMessage(t);
            }();
            Check(st);
          },
          "text"_a, "Extracts from a user message (\"yes\" records the confirmation).")
      .def(
          "propose_action",
          [](PySession& s, py::handle call_id, py::handle tool, py::handle arguments) {
            ProposedCall c = MakeCall(call_id, tool, arguments);
            Busy busy(s);
            s.session->ProposeAction(std::move(c));
          },
          "call_id"_a, "tool"_a, "arguments"_a = py::none(),
          "The action the agent proposed to the user; the next \"yes\" binds to it.")
      .def(
          "check",
          [](PySession& s, py::handle call_id, py::handle tool, py::handle arguments) {
            return Decide(s, &Session::Check, MakeCall(call_id, tool, arguments));
          },
          "call_id"_a, "tool"_a, "arguments"_a = py::none(),
          "Pure policy: the decision, staged in the turn; never runs or commits anything.")
      .def(
          "authorize",
          [](PySession& s, py::handle call_id, py::handle tool, py::handle arguments) {
            return Decide(s, &Session::Authorize, MakeCall(call_id, tool, arguments));
          },
          "call_id"_a, "tool"_a, "arguments"_a = py::none(),
          "For loops that run tools themselves: run the call only if result.decision.allowed, "
          "then record_tool_output().")
      .def(
          "record_tool_output",
          [](PySession& s, py::handle call_id, py::handle tool, py::handle arguments,
             py::handle output, bool is_error) {
            ProposedCall c = MakeCall(call_id, tool, arguments);
            ToolOutput out;
            out.output = PyUnicode_Check(output.ptr()) ? nlohmann::json(Text(output, "output"))
                                                       : ToJson(output, "output");
            out.error = is_error;
            Busy busy(s);
            Status st = [&] {
              py::gil_scoped_release release;
              return s.session->RecordToolOutput(c, out);
            }();
            Check(st);
          },
          "call_id"_a, "tool"_a, "arguments"_a, "output"_a, py::kw_only(), "is_error"_a = false,
          "Records what an authorized call returned (extraction, call record).")
      .def(
          "handle_tool_call",
          [](PySession& s, py::handle call_id, py::handle tool, py::handle arguments,
             const py::object& execute, std::optional<double> timeout,
             const std::string& on_error) {
            CheckOnError(on_error);
            if (!PyCallable_Check(execute.ptr())) RaiseInvalid("execute must be callable");
            if (timeout && !(*timeout > 0)) RaiseInvalid("timeout must be positive");
            PyCallResult r{MakeCall(call_id, tool, arguments), {}};
            py::object call_obj = py::cast(r.call);
            std::optional<py::error_already_set> raised;
            Busy busy(s);
            {
              ContextToolExecutor exec = PythonExecutor(execute, &call_obj, timeout, raised);
              py::gil_scoped_release release;
              r.result = s.session->HandleToolCall(r.call, exec);
            }
            return Finish(std::move(r), raised, on_error);
          },
          "call_id"_a, "tool"_a, "arguments"_a, "execute"_a, py::kw_only(),
          "timeout"_a = py::none(), "on_error"_a = "raise",
          R"(Gates the call; only if allowed calls execute(call) and records its output.

execute receives a taskledger.Call and returns a JSON-able value or a str.
If it raises (or runs past `timeout` seconds), the call is recorded with
outcome "error" and then, with on_error="raise" (default), the exception is
re-raised carrying the CallResult as its `call_result` attribute; with
on_error="return" the CallResult is returned with the exception in `.error`.
A tool that overruns its timeout keeps running in a daemon thread.)")
      .def(
          "resume_approved",
          [](PySession& s, const py::object& execute, std::optional<double> timeout) {
            if (!PyCallable_Check(execute.ptr())) RaiseInvalid("execute must be callable");
            if (timeout && !(*timeout > 0)) RaiseInvalid("timeout must be positive");
            Busy busy(s);
            std::optional<py::error_already_set> raised;
            std::map<std::string, py::object> errors;  // by call id
            ContextToolExecutor inner = PythonExecutor(execute, nullptr, timeout, raised);
            auto keep = [&](const ProposedCall& call) {
              py::gil_scoped_acquire gil;
              if (raised) errors[call.id] = raised->value();
              raised.reset();
            };
            ContextToolExecutor exec = [&](const ProposedCall& call,
                                           const ToolContext& ctx) -> Result<ToolOutput> {
              try {
                Result<ToolOutput> out = inner(call, ctx);
                keep(call);
                return out;
              } catch (const ToolRaised&) {
                keep(call);
                throw;
              }
            };
            auto resumed = [&] {
              py::gil_scoped_release release;
              return s.session->ResumeApproved(exec);
            }();
            py::list out;
            for (CallResult& r : Unwrap(std::move(resumed))) {
              ProposedCall call;
              if (r.command) call = r.command->call;
              call.id = r.decision_record.CallId();
              PyCallResult p{std::move(call), std::move(r)};
              if (auto it = errors.find(p.call.id); it != errors.end()) p.error = it->second;
              out.append(py::cast(std::move(p)));
            }
            return out;
          },
          "execute"_a, py::kw_only(), "timeout"_a = py::none(),
          R"(Runs the commands an operator approved (taskledger commands approve), each once,
and reports the ones an operator denied; returns their CallResults, the tool messages
to hand the model. A tool that raises is recorded (uncertain: it may have taken effect)
and its exception is in that CallResult's .error. Empty without a command store.)")
      .def(
          "end_turn",
          [](PySession& s) {
            Busy busy(s);
            auto v = [&] {
              py::gil_scoped_release release;
              return s.session->EndTurn();
            }();
            return Unwrap(std::move(v));
          },
          "Commits the turn; returns the version. Conflict: rebase() then end_turn() again.")
      .def(
          "flush",
          [](PySession& s) {
            Busy busy(s);
            Status st = [&] {
              py::gil_scoped_release release;
              return s.session->Flush();
            }();
            Check(st);
          },
          "Reads the answer of a write's settle still in flight (on a Redis command store a "
          "write returns once its tool has run and its outcome is sent; the next write, "
          "end_turn() or this reads the answer). Raises its error, naming the command, if the "
          "store refused or lost it; the run's startup guard then reconciles the command.")
      .def(
          "rebase",
          [](PySession& s) {
            Busy busy(s);
            Status st = [&] {
              py::gil_scoped_release release;
              return s.session->Rebase();
            }();
            Check(st);
          },
          "Reloads the head and re-applies the staged turn on top.")
      .def(
          "render",
          [](PySession& s, const std::string& format, size_t max_chars, bool include_provenance,
             const std::string& state) {
            Busy busy(s);
            const Ledger& l = s.session->ledger();
            if (state != "working" && state != "head")
              RaiseInvalid("state must be working or head");
            return RenderState(state == "head" ? l.head() : l.working(), format, max_chars,
                               include_provenance, s.session->clock().NowMs(), s.pack.get());
          },
          py::kw_only(), "format"_a = "plain", "max_chars"_a = 0, "include_provenance"_a = false,
          "state"_a = "working",
          "The task-state block for the prompt (plain, markdown, xml or json), without what the "
          "pack's pack.json \"render\" marks internal and with its redacted fields hidden.")
      .def_property_readonly(
          "ledger", [](std::shared_ptr<PySession> s) { return PyLedgerView{std::move(s)}; })
      .def_property_readonly("tenant", [](const PySession& s) { return s.session->id().tenant; })
      .def_property_readonly("conversation",
                             [](const PySession& s) { return s.session->id().conversation; })
      .def_property_readonly("pack", [](const PySession& s) { return PyPack{s.pack}; });
}

}  // namespace taskledger::py
