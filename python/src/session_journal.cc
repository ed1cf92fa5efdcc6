// Bindings of a Session's journal (Session.open(..., journal=True)): the
// loop passes each model response and every other non-deterministic value
// (clock readings, random ids) through journaled() / journaled_now_ms() /
// journaled_random(), so a crashed loop resumed on the same run gets the
// recorded values back instead of asking the model again (see session.h's
// "Journal" paragraph). A `produce` callable that raises records nothing and
// its exception reaches the caller unchanged. The GIL is released while the
// journal talks to the command store and taken back to run `produce`.
#include <optional>
#include <string>
#include <utility>

#include <pybind11/functional.h>

#include "convert.h"
#include "objects.h"
#include "py_session.h"
#include "taskledger/session/session.h"

namespace taskledger::py {
namespace {

namespace py = pybind11;
using namespace py::literals;
using PySessionClass = py::class_<PySession, std::shared_ptr<PySession>>;

// Runs `fn` (a Python callable) for the journal with the GIL held; a Python
// exception is kept in `raised` and reported to the journal as an error, so
// nothing is recorded at that position.
template <typename T, typename Convert>
std::function<Result<T>()> Producer(const py::object& fn,
                                    std::optional<py::error_already_set>& raised, Convert convert) {
  return [&fn, &raised, convert]() -> Result<T> {
    py::gil_scoped_acquire gil;
    try {
      return convert(fn());
    } catch (py::error_already_set& e) {
      raised = std::move(e);
      return Status::Internal("the journaled callable raised");
    }
  };
}

template <typename T>
T Finish(Result<T> r, std::optional<py::error_already_set>& raised) {
  if (raised) throw std::move(*raised);  // the callable's own exception, unchanged
  return Unwrap(std::move(r));
}

}  // namespace

void RegisterSessionJournal(py::module_& m) {
  auto cls = py::reinterpret_borrow<PySessionClass>(m.attr("Session"));
  cls.def(
         "journaled",
         [](PySession& s, const std::string& kind, py::handle request, const py::object& produce) {
           if (kind.empty()) RaiseInvalid("kind must not be empty");
           if (!PyCallable_Check(produce.ptr())) RaiseInvalid("produce must be callable");
           nlohmann::json req = ToJson(request, "request");
           std::optional<py::error_already_set> raised;
           auto fn = Producer<nlohmann::json>(
               produce, raised, [](const py::object& v) { return ToJson(v, "produce's result"); });
           Busy busy(s);
           auto r = [&] {
             py::gil_scoped_release release;
             return s.session->Journaled(kind, req, fn);
           }();
           return FromJson(Finish(std::move(r), raised));
         },
         "kind"_a, "request"_a, "produce"_a,
         R"(The value recorded at the journal's next position, or produce() recorded there.

Use it for each model response (kind "model", request = what the model is asked) and
anything else a resumed loop must see again unchanged. produce takes no arguments and
returns a JSON-able value; if it raises, nothing is recorded and the exception is
re-raised. Raises Divergence when kind or request differ from what is recorded at this
position (every later journaled call too), FailedPrecondition without journal=True.)")
      .def(
          "journaled_now_ms",
          [](PySession& s) {
            Busy busy(s);
            py::gil_scoped_release release;
            return Unwrap(s.session->JournaledNowMs());
          },
          "The session clock in ms since the epoch, journaled (kind \"clock\").")
      .def(
          "journaled_random",
          [](PySession& s, const py::object& rng) {
            py::object draw = rng;
            if (draw.is_none()) {
              draw = py::module_::import("random").attr("SystemRandom")().attr("getrandbits");
              draw = py::module_::import("functools").attr("partial")(draw, 64);
            } else if (!PyCallable_Check(draw.ptr())) {
              RaiseInvalid("rng must be callable");
            }
            std::optional<py::error_already_set> raised;
            auto fn = Producer<nlohmann::json>(draw, raised, [](const py::object& v) {
              if (!PyLong_Check(v.ptr())) RaiseInvalid("rng must return an int");
              unsigned long long u = PyLong_AsUnsignedLongLong(v.ptr());
              if (PyErr_Occurred() != nullptr) {
                PyErr_Clear();
                RaiseInvalid("rng must return an int in [0, 2**64)");
              }
              return nlohmann::json(static_cast<uint64_t>(u));
            });
            Busy busy(s);
            // The same record as Session::JournaledRandom: kind "random", an
            // empty request, the draw as an unsigned integer.
            auto r = [&] {
              py::gil_scoped_release release;
              return s.session->Journaled("random", nlohmann::json::object(), fn);
            }();
            nlohmann::json v = Finish(std::move(r), raised);
            if (!v.is_number_unsigned() && !v.is_number_integer()) {
              Raise(Status::Corruption("journal random entry is not an integer"));
            }
            return v.get<uint64_t>();
          },
          "rng"_a = py::none(),
          "A random 64-bit draw, journaled (kind \"random\"): rng() if given (an int in "
          "[0, 2**64)), else the system's random source.")
      .def_property_readonly(
          "journal_replayed_steps",
          [](const PySession& s) -> py::object {
            const Journal* j = s.session->journal();
            if (j == nullptr) return py::none();
            return py::int_(j->replayed_steps());
          },
          "How many journaled values came from the record since the session opened; None "
          "without a journal.");
}

}  // namespace taskledger::py
