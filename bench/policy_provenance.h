// Provenance in bench_policy (#23): a check whose rule asks the sources of 3
// arguments and the untrusted URL tokens of a 2 KB body, on the retail
// 2,000-entry ledger, with the provenance index fed by a user message and 50
// tool outputs of 4 KB of text each (URLs, addresses, names, numbers). The
// call is allowed after the rule ran. Goal p50 <= 3 us, p99 <= 15 us.
// "provenance_check_miss_*" is the same check right after the index changed
// (nothing cached: the body tokenised, each token looked up).
// A second check times intent binding: call.designated on a URL found in one
// of those 50 outputs (designated by its channel, which the user named), with
// the same index ("designated_check_*").
// Included by bench_policy.cc only.
#pragma once

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy_retail.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/checker.h"
#include "taskledger/provenance/index.h"

namespace taskledger::bench_provenance {

inline constexpr const char* kProvenanceRule = R"(
rule {
  id = "chat.sources", tools = {"send_message"},
  check = function(call, ledger)
    local to, channel, amount = call.sources("recipient"), call.sources("channel"),
      call.sources("amount")
    if #to == 0 or #channel == 0 or #amount == 0 then return deny("unknown source") end
    local bad = call.untrusted_tokens("body", "url")
    if #bad > 0 then return deny("untrusted link " .. bad[1].text) end
    return allow()
  end,
}
rule {
  id = "chat.designated", tools = {"open_page"},
  check = function(call, ledger)
    local ok = call.designated(call.args.url, {tools = {"read_channel"}})
    if not ok then return deny("not designated") end
    return allow()
  end,
}
)";

inline std::string Page(int n) {
  std::string text;
  int k = 0;
  while (text.size() < 4096) {
    text += "Member m" + std::to_string(n) + "_" + std::to_string(k) + " wrote about item " +
            std::to_string(1000 * n + k) + " at https://site" + std::to_string(n) + ".com/p/" +
            std::to_string(k) + " (mail them at m" + std::to_string(k) + "@team" +
            std::to_string(n) + ".org). Lorem ipsum dolor sit amet, consectetur. ";
    ++k;
  }
  return text;
}

inline nlohmann::json ProvenanceNumbers(int iterations,
                                        double (*percentile)(std::vector<double>&, double)) {
  auto pack = RulePack::FromFiles(
      {{"pack.json", R"({"name": "prov", "tools": {"writes": ["send_message", "open_page"]},
                         "trust": {"tools": {"read_channel": {"/*/sender": true}}}})"},
       {"rules.lua", kProvenanceRule}});
  if (!pack) {
    std::cerr << "provenance pack: " << pack.error().ToString() << "\n";
    return nullptr;
  }
  auto checker = PolicyChecker::Create(pack.value());
  if (!checker) return nullptr;
  provenance::ProvenanceIndex index(pack.value()->trust());
  const std::string user =
      "Post the summary to #general for Alice: amount 250, links www.informations.com, "
      "https://docs.example.com/a and www.news.org/today";
  if (!index.AddUserMessage(1, user).ok()) return nullptr;
  for (int i = 0; i < 50; ++i) {
    nlohmann::json out = nlohmann::json::array();
    out.push_back({{"sender", "Alice"}, {"recipient", "general"}, {"body", Page(i)}});
    if (!index.AddToolOutput(1, "read_channel", "c" + std::to_string(i), out).ok()) return nullptr;
  }
  std::string body = "Summary: ";
  while (body.size() < 2048) {
    body +=
        "see www.informations.com and https://docs.example.com/a/ and www.news.org/today; "
        "the team agreed on the plan and the numbers look fine overall. ";
  }
  const ProposedCall call{
      "s1",
      "send_message",
      {{"recipient", "alice"}, {"channel", "general"}, {"amount", 250}, {"body", body}}};
  const LedgerState state = bench_retail::RetailLedger(100, 20, 2000);
  checker.value()->SetProvenance(&index);
  auto time_check = [&](const ProposedCall& c, std::vector<double>& us) {
    for (int i = 0; i < iterations + 500; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      PolicyDecision d = checker.value()->Check(c, state, {"prov", 1}, 1'700'000'000'000);
      auto t1 = std::chrono::steady_clock::now();
      if (!d.allowed()) {
        std::cerr << "provenance fixture is wrong: " << d.rule_id << ": " << d.reason << "\n";
        std::abort();
      }
      if (i >= 500) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
  };
  std::vector<double> us;
  time_check(call, us);
  // The first check after the index changed (in a session: after every tool
  // output or user message), so nothing is cached: a copy of the index that
  // takes a constant nobody asks about before each check.
  provenance::ProvenanceIndex changing = index;
  checker.value()->SetProvenance(&changing);
  std::vector<double> miss;
  for (int i = 0; i < iterations / 10 + 50; ++i) {
    if (!changing.AddConstant("bench", "unasked").ok()) return nullptr;
    auto t0 = std::chrono::steady_clock::now();
    PolicyDecision d = checker.value()->Check(call, state, {"prov", 1}, 1'700'000'000'000);
    auto t1 = std::chrono::steady_clock::now();
    if (!d.allowed()) return nullptr;
    if (i >= 50) miss.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::vector<double> miss_copy = miss;
  checker.value()->SetProvenance(&index);
  const ProposedCall open{"s2", "open_page", {{"url", "https://site7.com/p/0/"}}};
  std::vector<double> designated;
  time_check(open, designated);
  std::vector<double> designated_copy = designated;
  std::vector<double> copy = us;
  return {{"provenance_check_p50_us", percentile(us, 0.5)},
          {"provenance_check_p99_us", percentile(copy, 0.99)},
          {"provenance_check_miss_p50_us", percentile(miss, 0.5)},
          {"provenance_check_miss_p99_us", percentile(miss_copy, 0.99)},
          {"designated_check_p50_us", percentile(designated, 0.5)},
          {"designated_check_p99_us", percentile(designated_copy, 0.99)},
          {"provenance_index_sources", index.source_count()},
          {"provenance_body_bytes", body.size()}};
}

}  // namespace taskledger::bench_provenance
