// The retail pack (rules/retail) in bench_policy: check latency on a
// 2,000-entry ledger holding 100 orders of 20 users, and the same checks on a
// 100-entry ledger (5 orders, 2 users), so the ratio shows how the pack's cost
// grows with the ledger (#18 asks for at most 1.5x). Two writes alternate, both
// allowed after every rule that applies ran: cancel_pending_order and
// modify_pending_order_payment (to a gift card of the authenticated user).
// Included by bench_policy.cc only.
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/checker.h"

namespace taskledger::bench_retail {

inline LedgerState RetailLedger(int orders, int users, int target_entries) {
  LedgerState s;
  s.version = 30;
  auto put = [&](Category c, const std::string& key, nlohmann::json v) {
    Entry e;
    e.value = std::move(v);
    e.provenance.source = SourceKind::kToolOutput;
    e.provenance.verified = true;
    s.of(c)[key] = std::move(e);
  };
  for (int u = 0; u < users; ++u) {
    std::string user = "user." + std::string("u_") + std::to_string(u) + ".payment.";
    put(Category::kFact, user + "credit_card_" + std::to_string(u) + ".source", "credit_card");
    put(Category::kFact, user + "gift_card_" + std::to_string(u) + ".source", "gift_card");
    put(Category::kFact, user + "gift_card_" + std::to_string(u) + ".balance", 500.0);
  }
  for (int i = 0; i < orders; ++i) {
    const int u = i % users;
    std::string o = "order.#W" + std::to_string(1000 + i) + ".";
    put(Category::kFact, o + "status", i % 2 == 0 ? "pending" : "delivered");
    put(Category::kFact, o + "user_id", "u_" + std::to_string(u));
    put(Category::kFact, o + "original_payment_method", "credit_card_" + std::to_string(u));
    put(Category::kFact, o + "total", 120.5);
    put(Category::kFact, o + "paid_with.credit_card_" + std::to_string(u), true);
    for (int k = 0; k < 4; ++k) {
      std::string item = std::to_string(100000 + 10 * i + k);
      put(Category::kFact, o + "item." + item + ".price", 30.0 + k);
      put(Category::kFact, "item." + item + ".product_id", "p" + std::to_string(k));
    }
  }
  put(Category::kIdentifier, "user.authenticated.u_0", "u_0");
  put(Category::kCondition, "confirmation", {{"text", "yes"}, {"action", nullptr}});
  for (int i = 0; static_cast<int>(s.size()) < target_entries; ++i) {
    put(Category::kFact, "product.p" + std::to_string(i) + ".name", "thing " + std::to_string(i));
  }
  return s;
}

// {p50, p99} in microseconds of the two writes, alternating, on `state`.
inline std::pair<double, double> TimeRetail(PolicyChecker& checker, const LedgerState& state,
                                            int iterations,
                                            double (*percentile)(std::vector<double>&, double)) {
  const std::vector<ProposedCall> calls = {
      {"c1", "cancel_pending_order", {{"order_id", "#W1000"}, {"reason", "no longer needed"}}},
      {"c2",
       "modify_pending_order_payment",
       {{"order_id", "#W1000"}, {"payment_method_id", "gift_card_0"}}}};
  std::vector<double> us;
  for (int i = 0; i < iterations + 500; ++i) {
    const ProposedCall& call = calls[static_cast<size_t>(i) % calls.size()];
    auto t0 = std::chrono::steady_clock::now();
    PolicyDecision d = checker.Check(call, state, {"retail", 1}, 1'700'000'000'000);
    auto t1 = std::chrono::steady_clock::now();
    if (!d.allowed()) {
      std::cerr << "retail fixture is wrong: " << call.tool << " " << OutcomeName(d.outcome)
                << " by " << d.rule_id << ": " << d.reason << "\n";
      std::abort();
    }
    if (i >= 500) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::vector<double> copy = us;
  return {percentile(us, 0.5), percentile(copy, 0.99)};
}

// `dir` empty: rules/retail of this source tree.
inline nlohmann::json RetailNumbers(int iterations,
                                    double (*percentile)(std::vector<double>&, double),
                                    std::filesystem::path dir = {}) {
  if (dir.empty()) {
    dir = std::filesystem::path(TASKLEDGER_SOURCE_DIR) / "rules" / "retail";
  }
  auto pack = RulePack::Load(dir);
  if (!pack) {
    std::cerr << "retail pack: " << pack.error().ToString() << "\n";
    return nullptr;
  }
  auto checker = PolicyChecker::Create(pack.value());
  if (!checker) return nullptr;
  LedgerState big = RetailLedger(100, 20, 2000);
  LedgerState small = RetailLedger(5, 2, 100);
  auto [p50, p99] = TimeRetail(*checker.value(), big, iterations, percentile);
  auto [small_p50, small_p99] = TimeRetail(*checker.value(), small, iterations, percentile);
  return {{"retail_check_p50_us", p50},
          {"retail_check_p99_us", p99},
          {"retail_small_check_p50_us", small_p50},
          {"retail_small_check_p99_us", small_p99},
          {"retail_ledger_entries", big.size()},
          {"retail_small_ledger_entries", small.size()},
          {"retail_growth_p50", p50 / small_p50}};
}

}  // namespace taskledger::bench_retail
