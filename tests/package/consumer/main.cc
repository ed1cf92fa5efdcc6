// A program outside the taskledger tree, built against the installed package
// by tests/package: it proves find_package(taskledger) gives a usable target.
#include <iostream>
#include "taskledger/ledger/ledger.h"
#include "taskledger/ledger/memory_store.h"
int main() {
  auto store = taskledger::NewMemoryStore();
  auto ledger = taskledger::Ledger::Open(*store, {"t", "c"}).value();
  taskledger::Update u;
  u.key = "k";
  u.value = 1;
  if (!ledger->Stage(u).ok() || !ledger->Commit().has_value()) return 1;
  std::cout << "version " << ledger->version() << "\n";
}
