// taskledger.Ledger: read access to a session's ledger (versions, the head
// and working states, the staged turn, past versions, diffs, turn records).
// Each read holds the session like a call does (py_session.h); store reads
// release the GIL.
#include <optional>
#include <utility>

#include <pybind11/stl.h>

#include "convert.h"
#include "objects.h"
#include "py_session.h"
#include "taskledger/ledger/codec.h"

namespace taskledger::py {
namespace {

namespace py = pybind11;
using namespace py::literals;

PyState Snapshot(const LedgerState& s) { return PyState{std::make_shared<const LedgerState>(s)}; }

}  // namespace

void RegisterLedgerView(py::module_& m) {
  // Every read takes the session like a call does: a state read while
  // another thread runs a call on the session would race with it.
  py::class_<PyLedgerView>(m, "Ledger", "Read access to a session's ledger.")
      .def_property_readonly(
          "version",
          [](const PyLedgerView& v) {
            Busy busy(*v.s);
            return v.s->session->ledger().version();
          },
          "The last committed version.")
      .def_property_readonly("turn",
                             [](const PyLedgerView& v) {
                               Busy busy(*v.s);
                               return v.s->session->ledger().turn();
                             })
      .def_property_readonly("head",
                             [](const PyLedgerView& v) {
                               Busy busy(*v.s);
                               return Snapshot(v.s->session->ledger().head());
                             })
      .def_property_readonly(
          "working",
          [](const PyLedgerView& v) {
            Busy busy(*v.s);
            return Snapshot(v.s->session->ledger().working());
          },
          "Head plus what the current turn staged (what the policy sees).")
      .def_property_readonly(
          "pending",
          [](const PyLedgerView& v) {
            Busy busy(*v.s);
            return PyTurn{v.s->session->pending()};
          },
          "The turn being built (decisions, calls, updates staged so far).")
      .def(
          "at",
          [](const PyLedgerView& v, uint64_t version) {
            Busy busy(*v.s);
            auto st = [&] {
              py::gil_scoped_release release;
              return v.s->session->ledger().At(version);
            }();
            return PyState{std::make_shared<const LedgerState>(Unwrap(std::move(st)))};
          },
          "version"_a, "The state at a past version (NotFound past the head).")
      .def(
          "diff",
          [](const PyLedgerView& v, uint64_t from, uint64_t to) {
            Busy busy(*v.s);
            auto d = [&] {
              py::gil_scoped_release release;
              return v.s->session->ledger().DiffVersions(from, to);
            }();
            return FromJson(EncodeDiff(Unwrap(std::move(d))));
          },
          "from_version"_a, "to_version"_a,
          "Entries added, changed and removed between two versions (a dict).")
      .def(
          "turns",
          [](const PyLedgerView& v, uint64_t first, std::optional<uint64_t> last) {
            Busy busy(*v.s);
            const Session& s = *v.s->session;
            uint64_t to = last.value_or(s.ledger().version());
            py::list out;
            if (to < first) return out;
            auto turns = [&] {
              py::gil_scoped_release release;
              return v.s->store->ReadTurns(s.id(), first, to);
            }();
            for (auto& t : Unwrap(std::move(turns))) out.append(PyTurn{std::move(t)});
            return out;
          },
          "first"_a = 1, "last"_a = py::none(), "Committed turn records first..last.");
}

}  // namespace taskledger::py
