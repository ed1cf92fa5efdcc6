// bench_python (C++ half): the C++ side of `scripts/bench python`, which
// compares the Python binding's per-call cost with the C++ call it wraps.
// bench/bench_python.py runs this executable and measures the Python side on
// the very same fixture, then prints the combined JSON.
//
// Fixture (mirrored exactly in bench_python.py): the subscription pack, a
// memory store, a session that has run get_subscription and verify_identity.
// handle_tool_call: get_subscription executed by a tool returning
// {"status":"grace_period","days_remaining":5} (gate, execution, extraction,
// staging); a fresh session every 200 calls keeps the turn bounded (not
// timed). check: PolicyChecker::Check of cancel_subscription against that
// session's working state (both rules run). Single-threaded.
//
// Usage: bench_python RULES_DIR [--iterations N]
// The last stdout line is JSON: {"cpp_handle_tool_call_p50_us", "cpp_check_p50_us"}.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/ledger/memory_store.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/checker.h"
#include "taskledger/session/session.h"

using namespace taskledger;

namespace {

double P50(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Us(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

Result<ToolOutput> Tools(const ProposedCall& call) {
  if (call.tool == "get_subscription") {
    return ToolOutput{{{"status", "grace_period"}, {"days_remaining", 5}}};
  }
  return ToolOutput{{{"verified", true}}};
}

std::unique_ptr<Session> Fresh(Store& store, const std::shared_ptr<const RulePack>& pack, int n) {
  auto s = Session::Open(store, {"bench", "c" + std::to_string(n)}, pack).value();
  s->HandleToolCall({"g", "get_subscription", {{"user_id", "u1"}}}, Tools);
  s->HandleToolCall({"v", "verify_identity", {{"user_id", "u1"}}}, Tools);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return std::cerr << "usage: bench_python RULES_DIR [--iterations N]\n", 2;
  int iterations = 20000;
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--iterations") iterations = std::atoi(argv[i + 1]);
  }
  auto pack = RulePack::Load(argv[1]);
  if (!pack) return std::cerr << pack.error().ToString() << "\n", 2;
  auto store = NewMemoryStore();

  std::vector<double> handle;
  int sessions = 0;
  auto s = Fresh(*store, *pack, sessions++);
  const ProposedCall get{"c", "get_subscription", {{"user_id", "u1"}}};
  for (int i = 0; i < iterations; ++i) {
    if (i % 200 == 199) s = Fresh(*store, *pack, sessions++);
    auto t0 = std::chrono::steady_clock::now();
    CallResult r = s->HandleToolCall(get, Tools);
    handle.push_back(Us(std::chrono::steady_clock::now() - t0));
    if (!r.executed) return std::cerr << "bench: get_subscription did not run\n", 1;
  }

  auto checker = PolicyChecker::Create(*pack).value();
  auto state_session = Fresh(*store, *pack, sessions++);
  const LedgerState& state = state_session->ledger().working();
  const ProposedCall cancel{"x", "cancel_subscription", {{"user_id", "u1"}}};
  std::vector<double> check;
  for (int i = 0; i < iterations; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    PolicyDecision d = checker->Check(cancel, state, ViewKey{}, 1'700'000'000'000);
    check.push_back(Us(std::chrono::steady_clock::now() - t0));
    if (d.allowed()) return std::cerr << "bench: the cancellation was allowed\n", 1;
  }
  std::cout << nlohmann::json{{"cpp_handle_tool_call_p50_us", P50(handle)},
                              {"cpp_check_p50_us", P50(check)},
                              {"iterations", iterations}}
                   .dump()
            << "\n";
}
