// bench_policy: decision latency of the Lua policy gate, compared with two
// peer engines running the same rules.
//
// Fixture (same as bench/peers/fixture.js): a 10-rule pack for
// cancel_pending_order over a 200-entry ledger; every rule allows, so all ten
// run on every check. The checker is reused and the view key stays the same
// (the ledger has not changed between checks), as in an agent loop that
// checks several calls of one turn. Also reported: the latency when every
// check sees a new ledger generation (the observed index is rebuilt).
//
// Peers: bench/peers/peers.js times @cedar-policy/cedar-wasm and
// @marcbachmann/cel-js (versions pinned in bench/peers/package.json), which are
// npm-installed into <this executable's folder>/policy-peers on first use.
// Without node/npm or network the peer keys are omitted and stderr says why.
//
// Records: one rule finding the orders of a user on a 2,000-entry ledger (100
// orders, 20 users), with ledger.find + ledger.record against the 0.1 way
// (ledger.keys over every order key and string slicing); "new view" checks
// see a new state each time (one entry changed), so the find index follows
// by diffing.
//
// Retail: the rules/retail pack on 2,000 and 100-entry ledgers (policy_retail.h).
// Provenance: sources of 3 arguments and untrusted URLs of a 2 KB body against
// an index of 50 outputs of 4 KB (policy_provenance.h).
//
// Usage: bench_policy [--iterations N] [--no-peers] [--retail [--pack DIR]]
// --retail runs the retail section only (for profiling it: the rest of the
// bench would dominate a whole-run profile); its JSON has the retail keys.
// --pack DIR times another copy of the retail pack (an A/B of a change).
// The last stdout line is JSON: {"check_p50_us", "check_p99_us",
// "check_new_view_p50_us", "records_find_p50_us", "records_find_new_view_p50_us",
// "records_scan_p50_us", "retail_check_p50_us", "retail_check_p99_us",
// "retail_small_check_p50_us", "retail_growth_p50", "provenance_check_p50_us",
// "provenance_check_p99_us", "cedar_wasm_p50_us", ...}.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy_provenance.h"
#include "policy_retail.h"

#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/checker.h"

namespace fs = std::filesystem;
using namespace taskledger;

namespace {

constexpr int64_t kNow = 1'700'000'000'000;

const char* kRules = R"lua(
local function order_key(call, field) return "order." .. call.args.order_id .. "." .. field end

rule { id = "retail.user_identified", tools = {"cancel_pending_order"}, priority = 100,
  check = function(call, ledger)
    if ledger.identifier("user_id") == nil then
      return deny("the user is not identified; find the user id first") end
    return allow() end }
rule { id = "retail.cancel_requires_pending", tools = {"cancel_pending_order"}, priority = 90,
  check = function(call, ledger)
    local status = ledger.fact(order_key(call, "status"))
    if status ~= "pending" then
      return deny("order " .. call.args.order_id .. " is " .. tostring(status) ..
                  "; only pending orders can be cancelled") end
    return allow() end }
rule { id = "retail.order_grounded", tools = {"cancel_pending_order"}, priority = 80,
  check = function(call, ledger)
    if not ledger.observed(call.args.order_id) then
      return deny("order id " .. call.args.order_id .. " was never shown by a tool") end
    return allow() end }
rule { id = "retail.order_owned", tools = {"cancel_pending_order"}, priority = 70,
  check = function(call, ledger)
    if ledger.fact(order_key(call, "user_id")) ~= ledger.identifier("user_id") then
      return deny("the order belongs to another user") end
    return allow() end }
rule { id = "retail.cancel_reason", tools = {"cancel_pending_order"}, priority = 60,
  check = function(call, ledger)
    local r = call.args.reason
    if r ~= "no longer needed" and r ~= "ordered by mistake" then
      return deny("reason must be 'no longer needed' or 'ordered by mistake'") end
    return allow() end }
rule { id = "retail.cancel_rate", tools = {"cancel_pending_order"}, priority = 50,
  check = function(call, ledger)
    if ledger.calls("cancel_pending_order") >= 3 then
      return require_approval("more than three cancellations need a supervisor") end
    return allow() end }
rule { id = "retail.no_hold", tools = {"cancel_pending_order"}, priority = 40,
  check = function(call, ledger)
    if ledger.condition("account_hold") == true then
      return deny("the account is on hold; transfer to a human agent") end
    return allow() end }
rule { id = "retail.status_verified", tools = {"cancel_pending_order"}, priority = 30,
  check = function(call, ledger)
    if not ledger.verified("fact", order_key(call, "status")) then
      return deny("the order status was not read from a tool; call get_order_details") end
    return allow() end }
rule { id = "retail.amount_limit", tools = {"cancel_pending_order"}, priority = 20,
  check = function(call, ledger)
    if (ledger.fact(order_key(call, "total")) or 0) >= 5000 then
      return require_approval("cancelling orders of $5000 or more needs approval") end
    return allow() end }
rule { id = "retail.confirmed", tools = {"cancel_pending_order"}, priority = 10,
  check = function(call, ledger)
    if not ledger.confirmed(call) then
      return confirm("Cancel order " .. call.args.order_id .. "?") end
    return allow() end }
)lua";

LedgerState BuildLedger() {
  LedgerState s;
  s.version = 12;
  auto put = [&](Category c, std::string key, nlohmann::json v) {
    Entry e;
    e.value = std::move(v);
    e.provenance.source = SourceKind::kToolOutput;
    e.provenance.source_id = "get_order_details#c1";
    e.provenance.verified = true;
    s.of(c)[std::move(key)] = std::move(e);
  };
  for (int i = 0; i < 40; ++i) {
    std::string id = "#W" + std::to_string(i);
    put(Category::kFact, "order." + id + ".status", i % 3 == 0 ? "delivered" : "pending");
    put(Category::kFact, "order." + id + ".user_id", "ann_1");
    put(Category::kFact, "order." + id + ".total", 100 + i);
    put(Category::kFact, "order." + id + ".order_id", id);
  }
  for (int i = 0; i < 20; ++i)
    put(Category::kFact, "product." + std::to_string(i) + ".price", 10 + i);
  put(Category::kIdentifier, "user_id", "ann_1");
  for (int i = 0; i < 9; ++i)
    put(Category::kIdentifier, "aux." + std::to_string(i), "aux_" + std::to_string(i));
  put(Category::kCondition, "account_hold", false);
  put(Category::kCondition, "confirmation", {{"text", "yes"}, {"action", nullptr}});
  for (int i = 0; i < 8; ++i) put(Category::kCondition, "flag." + std::to_string(i), i % 2 == 0);
  s.calls.push_back({11, {"c0", "cancel_pending_order", {{"order_id", "#W1"}}}, true, "ok"});
  s.calls.push_back({11, {"c1", "get_order_details", {{"order_id", "#W1"}}}, false, "ok"});
  return s;
}

double Percentile(std::vector<double>& v, double p);

const char* kFindRule = R"lua(
rule { id = "r.find", tools = {"cancel_pending_order"}, check = function(call, ledger)
  local n = 0
  for _, id in ipairs(ledger.find("fact", "order.{id}.user_id", call.args.user_id)) do
    if ledger.record("order", id).status == "pending" then n = n + 1 end
  end
  if n ~= 5 then return deny("expected 5 pending orders, got " .. n) end
  return allow() end }
)lua";

const char* kScanRule = R"lua(
rule { id = "r.scan", tools = {"cancel_pending_order"}, check = function(call, ledger)
  local n = 0
  local suffix = ".user_id"
  for _, key in ipairs(ledger.keys("fact", "order.")) do
    if string.sub(key, -#suffix) == suffix and ledger.fact(key) == call.args.user_id then
      local id = string.sub(key, #"order." + 1, -#suffix - 1)
      if ledger.fact("order." .. id .. ".status") == "pending" then n = n + 1 end
    end
  end
  if n ~= 5 then return deny("expected 5 pending orders, got " .. n) end
  return allow() end }
)lua";

// 100 orders of 20 users with 18 fields each, plus 200 other entries: 2,000.
LedgerState BuildRecordsLedger() {
  LedgerState s;
  s.version = 40;
  auto put = [&](std::string key, nlohmann::json v) {
    Entry e;
    e.value = std::move(v);
    e.provenance.source = SourceKind::kToolOutput;
    e.provenance.verified = true;
    s.of(Category::kFact)[std::move(key)] = std::move(e);
  };
  for (int i = 0; i < 100; ++i) {
    std::string o = "order.#W" + std::to_string(1000 + i) + ".";
    put(o + "status", i % 2 == 0 ? "pending" : "delivered");
    put(o + "user_id", "user_" + std::to_string(i % 20));
    for (int k = 0; k < 4; ++k) {
      std::string item = o + "item." + std::to_string(100 * i + k) + ".";
      put(item + "price", 10.5 + k);
      put(item + "product_id", "p" + std::to_string(k));
      put(item + "options", "size " + std::to_string(k));
      put(item + "name", "thing " + std::to_string(k));
    }
  }
  for (int i = 0; i < 20; ++i) {
    for (int k = 0; k < 10; ++k) {
      put("user.user_" + std::to_string(i) + ".f" + std::to_string(k), k);
    }
  }
  return s;
}

// p50 of `iterations` checks of `rule` (new state per check if new_view).
double MeasureRecords(const char* rule, int iterations, bool new_view) {
  auto pack = RulePack::FromFiles(
      {{"pack.json", R"({"name": "bench", "tools": {"writes": ["cancel_pending_order"]}})"},
       {"rules.lua", rule}});
  if (!pack) std::abort();
  auto checker = PolicyChecker::Create(pack.value());
  if (!checker) std::abort();
  LedgerState state = BuildRecordsLedger();
  ProposedCall call{"c", "cancel_pending_order", {{"user_id", "user_4"}}};
  std::vector<double> us;
  uint64_t generation = 1;
  for (int i = 0; i < iterations + 500; ++i) {
    if (new_view) {
      ++state.version;
      Entry e;
      e.value = i;
      state.of(Category::kFact)["user.user_7.visits"] = std::move(e);
    }
    ViewKey key{"records", new_view ? ++generation : 1};
    auto t0 = std::chrono::steady_clock::now();
    PolicyDecision d = checker.value()->Check(call, state, key, kNow);
    auto t1 = std::chrono::steady_clock::now();
    if (!d.allowed()) {
      std::cerr << "records fixture is wrong: " << d.reason << "\n";
      std::abort();
    }
    if (i >= 500) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  return Percentile(us, 0.5);
}

double Percentile(std::vector<double>& v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(static_cast<double>(v.size()) * p))];
}

// Installs the peers next to this executable and runs them; returns their
// JSON line, or a reason on failure.
nlohmann::json RunPeers(int iterations, std::string& why) {
  if (std::system("command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1") != 0) {
    why = "node or npm is not installed";
    return nullptr;
  }
  fs::path src = fs::path(TASKLEDGER_SOURCE_DIR) / "bench" / "peers";
  fs::path dir = fs::read_symlink("/proc/self/exe").parent_path() / "policy-peers";
  std::error_code ec;
  fs::create_directories(dir, ec);
  for (const char* f : {"package.json", "fixture.js", "peers.js"}) {
    fs::copy_file(src / f, dir / f, fs::copy_options::overwrite_existing, ec);
    if (ec) {
      why = "cannot copy " + (src / f).string() + ": " + ec.message();
      return nullptr;
    }
  }
  std::string quoted = "'" + dir.string() + "'";
  if (!fs::exists(dir / "node_modules/@cedar-policy/cedar-wasm/package.json") ||
      !fs::exists(dir / "node_modules/@marcbachmann/cel-js/package.json")) {
    std::string install =
        "cd " + quoted + " && npm install --no-audit --no-fund --loglevel=error >&2";
    if (std::system(install.c_str()) != 0) {
      why = "npm install of the pinned peers failed (no registry access?)";
      return nullptr;
    }
  }
  std::string run = "cd " + quoted + " && node peers.js " + std::to_string(iterations);
  FILE* p = popen(run.c_str(), "r");
  if (p == nullptr) {
    why = "cannot run node";
    return nullptr;
  }
  std::string out, last;
  char buf[4096];
  while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
  int rc = pclose(p);
  size_t end = out.find_last_not_of('\n');
  if (end != std::string::npos) last = out.substr(out.rfind('\n', end) + 1);
  nlohmann::json j = nlohmann::json::parse(last, nullptr, false);
  if (rc != 0 || j.is_discarded() || !j.is_object()) {
    why = "the peer script failed (exit " + std::to_string(rc) + ")";
    return nullptr;
  }
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 20000;
  bool peers = true;
  bool retail_only = false;
  std::string retail_pack;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iterations" && i + 1 < argc) {
      iterations = std::max(100, std::atoi(argv[++i]));
    } else if (a == "--no-peers") {
      peers = false;
    } else if (a == "--retail") {
      retail_only = true;
    } else if (a == "--pack" && i + 1 < argc) {
      retail_pack = argv[++i];
    } else {
      std::cerr << "usage: bench_policy [--iterations N] [--no-peers] [--retail [--pack DIR]]\n";
      return 2;
    }
  }
  if (retail_only) {
    nlohmann::json retail = bench_retail::RetailNumbers(iterations, Percentile, retail_pack);
    if (!retail.is_object()) return 1;
    retail["iterations"] = iterations;
    std::cout << retail.dump() << "\n";
    return 0;
  }
  auto pack = RulePack::FromFiles(
      {{"pack.json", R"({"name": "bench", "tools": {"writes": ["cancel_pending_order"]}})"},
       {"rules.lua", kRules}});
  if (!pack) {
    std::cerr << "pack: " << pack.error().ToString() << "\n";
    return 1;
  }
  auto checker = PolicyChecker::Create(pack.value());
  if (!checker) {
    std::cerr << "checker: " << checker.error().ToString() << "\n";
    return 1;
  }
  LedgerState state = BuildLedger();
  ProposedCall call{
      "call_1", "cancel_pending_order", {{"order_id", "#W17"}, {"reason", "no longer needed"}}};
  PolicyDecision first = checker.value()->Check(call, state, {"bench", 1}, kNow);
  if (first.outcome != Outcome::kAllow || first.rules.size() != 10) {
    std::cerr << "fixture is wrong: " << OutcomeName(first.outcome) << " by " << first.rule_id
              << ": " << first.reason << "\n";
    return 1;
  }

  auto measure = [&](bool new_view) {
    std::vector<double> us;
    us.reserve(static_cast<size_t>(iterations));
    uint64_t generation = 1;
    for (int i = 0; i < iterations + 2000; ++i) {
      ViewKey key{"bench", new_view ? ++generation : 1};
      auto t0 = std::chrono::steady_clock::now();
      PolicyDecision d = checker.value()->Check(call, state, key, kNow);
      auto t1 = std::chrono::steady_clock::now();
      if (!d.allowed()) std::abort();
      if (i >= 2000) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    return us;
  };
  std::vector<double> reused = measure(false);
  std::vector<double> fresh = measure(true);
  nlohmann::json out = {
      {"check_p50_us", Percentile(reused, 0.5)},
      {"check_p99_us", Percentile(reused, 0.99)},
      {"check_new_view_p50_us", Percentile(fresh, 0.5)},
      {"check_new_view_p99_us", Percentile(fresh, 0.99)},
      {"rules", 10},
      {"ledger_entries", state.size()},
      {"iterations", iterations},
      {"records_find_p50_us", MeasureRecords(kFindRule, iterations, false)},
      {"records_find_new_view_p50_us", MeasureRecords(kFindRule, iterations, true)},
      {"records_scan_p50_us", MeasureRecords(kScanRule, iterations, false)},
  };
  if (nlohmann::json prov = bench_provenance::ProvenanceNumbers(iterations, Percentile);
      prov.is_object()) {
    out.update(prov);
  }
  if (nlohmann::json retail = bench_retail::RetailNumbers(iterations, Percentile);
      retail.is_object()) {
    out.update(retail);
  }
  std::cout << "policy check, 10 rules, " << state.size() << "-entry ledger, view reused: p50 "
            << out["check_p50_us"] << " us, p99 " << out["check_p99_us"] << " us\n";
  if (peers) {
    std::string why;
    nlohmann::json p = RunPeers(iterations, why);
    if (p.is_object()) {
      out.update(p);
    } else {
      std::cerr << "bench_policy: peer numbers omitted: " << why << "\n";
    }
  } else {
    std::cerr << "bench_policy: peer numbers omitted: --no-peers\n";
  }
  for (auto& [k, v] : out.items()) {
    if (v.is_number_float()) v = std::round(v.get<double>() * 1000.0) / 1000.0;
  }
  std::cout << out.dump() << "\n";
  return 0;
}
