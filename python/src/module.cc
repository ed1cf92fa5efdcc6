// taskledger._core: the C++ core of the `taskledger` Python package (the
// package's __init__.py re-exports it). Registers the error family first, so
// every binding can raise it. Import-time only; no state of its own.
#include <pybind11/pybind11.h>

#include "convert.h"
#include "objects.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "taskledger's C++ core (use the `taskledger` package).";
  taskledger::py::RegisterErrors(m);
  taskledger::py::RegisterLedger(m);
  taskledger::py::RegisterDecisions(m);
  taskledger::py::RegisterLedgerView(m);
  taskledger::py::RegisterSession(m);
  taskledger::py::RegisterSessionJournal(m);
  taskledger::py::RegisterReplay(m);
  taskledger::py::RegisterAdapters(m);
  taskledger::py::RegisterCommands(m);
}
