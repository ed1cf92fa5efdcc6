// bench_turn: the cost of one agent turn as a function of how much the ledger
// already holds (issue #16: a turn costs what it changes, not what the ledger
// holds). Single-threaded, on the memory store.
//
// For a ledger prefilled with 10 and with 10,000 fact entries, each turn is:
// the agent proposes cancel_pending_order, the user confirms ("yes"), a read
// call (get_order_details, with extraction) and the write call through the
// gate (write-ahead commit, execution), then EndTurn. The same order is used
// every turn, so the ledger does not grow while it is measured. Also timed:
// one policy check of the write call right after a commit (a new view), and
// the memory a committed version retains when it changes 5 entries of
// 10,000 (live heap bytes, counted by replacing operator new/delete, averaged
// over 64 versions, so periodic full snapshots are included): in the memory
// store with its turn record ("bytes_per_version_10000") and the state alone
// ("state_bytes_per_version_10000").
//
// Usage: bench_turn [--turns N] [--rules DIR]
// The last stdout line is JSON: {"turn_p50_us_10":..,"turn_p50_us_10000":..,
// "turn_ratio":..,"check_p50_us_10000":..,"bytes_per_version_10000":..,
// "write_allowed":..}.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "taskledger/ledger/ledger.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/checker.h"
#include "taskledger/session/session.h"

namespace {
std::atomic<int64_t> g_live_bytes{0};
}  // namespace

// These replace the global operators: malloc/free underneath is intended.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  g_live_bytes.fetch_add(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  return p;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  g_live_bytes.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}
void operator delete(void* p, size_t) noexcept { operator delete(p); }
#pragma GCC diagnostic pop

using namespace taskledger;
using SteadyClock = std::chrono::steady_clock;

namespace {

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

double UsSince(SteadyClock::time_point t) {
  return std::chrono::duration<double, std::micro>(SteadyClock::now() - t).count();
}

Update Fill(size_t i, const std::string& value) {
  Update u;
  u.category = Category::kFact;
  u.key = "bench.fill." + std::to_string(i);
  u.value = value;
  u.provenance.source = SourceKind::kToolOutput;
  u.provenance.source_id = SharedString("bench_fill#f");
  u.provenance.verified = true;
  return u;
}

struct Measured {
  double turn_p50_us = 0;
  double check_p50_us = 0;
  int allowed = 0;
};

// Prefills conversation `conv` with `entries` facts, then runs `turns` turns.
Result<Measured> Run(const std::shared_ptr<const RulePack>& pack, size_t entries, int turns) {
  ManualClock clock;
  auto store = NewMemoryStore({}, clock);
  ConversationId id{"bench", "turn-" + std::to_string(entries)};
  {
    auto ledger = Ledger::Open(*store, id, clock);
    if (!ledger.has_value()) return ledger.error();
    std::vector<Update> fill;
    for (size_t i = 0; i < entries; ++i) fill.push_back(Fill(i, "value " + std::to_string(i)));
    if (Status s = ledger.value()->StageAll(std::move(fill)); !s.ok()) return s;
    if (auto c = ledger.value()->Commit(); !c.has_value()) return c.error();
  }
  SessionOptions options;
  options.clock = &clock;
  auto opened = Session::Open(*store, id, pack, options);
  if (!opened.has_value()) return opened.error();
  Session& s = *opened.value();
  auto checker = PolicyChecker::Create(pack);
  if (!checker.has_value()) return checker.error();

  const ToolExecutor tools = [](const ProposedCall& call) -> Result<ToolOutput> {
    if (call.tool != "get_order_details") return ToolOutput{{{"status", "cancelled"}}, false};
    return ToolOutput{
        {{"order_id", "#W1"},
         {"user_id", "u_1"},
         {"status", "pending"},
         {"items", {{{"item_id", "i1"}, {"product_id", "p1"}, {"price", 12.5}}}},
         {"payment_history", {{{"payment_method_id", "gift_card_1"}, {"amount", 12.5}}}}},
        false};
  };
  // Authenticate the user once, as a real conversation does first.
  const ToolExecutor whois = [](const ProposedCall&) -> Result<ToolOutput> {
    return ToolOutput{"u_1", false};
  };
  s.HandleToolCall({"c0", "find_user_id_by_email", {{"email", "u1@example.com"}}}, whois);
  if (auto v = s.EndTurn(); !v.has_value()) return v.error();
  const ProposedCall write{
      "w", "cancel_pending_order", {{"order_id", "#W1"}, {"reason", "no longer needed"}}};
  Measured m;
  std::vector<double> turn_us, check_us;
  for (int n = 0; n < turns; ++n) {
    clock.Advance(1000);
    ProposedCall read{"r" + std::to_string(n), "get_order_details", {{"order_id", "#W1"}}};
    ProposedCall w = write;
    w.id = "w" + std::to_string(n);
    auto start = SteadyClock::now();
    s.ProposeAction(w);
    if (Status st = s.RecordUserMessage("yes, please proceed"); !st.ok()) return st;
    s.HandleToolCall(read, tools);
    CallResult r = s.HandleToolCall(w, tools);
    if (r.decision.allowed()) {
      ++m.allowed;
    } else if (n == 0) {
      std::fprintf(stderr, "bench_turn: the write was not allowed: %s: %s\n",
                   r.decision.rule_id.c_str(), r.decision.reason.c_str());
    }
    if (auto v = s.EndTurn(); !v.has_value()) return v.error();
    turn_us.push_back(UsSince(start));

    const Ledger& ledger = s.ledger();
    start = SteadyClock::now();
    checker.value()->Check(w, ledger.head(), ViewKey{id.conversation, ledger.generation()},
                           clock.NowMs());
    check_us.push_back(UsSince(start));
  }
  m.turn_p50_us = Percentile(turn_us, 0.5);
  m.check_p50_us = Percentile(check_us, 0.5);
  return m;
}

// Live heap bytes a committed version retains when it changes 5 of `entries`.
Result<double> BytesPerVersion(size_t entries) {
  ManualClock clock;
  auto store = NewMemoryStore({}, clock);
  ConversationId id{"bench", "bytes"};
  auto opened = Ledger::Open(*store, id, clock);
  if (!opened.has_value()) return opened.error();
  Ledger& ledger = *opened.value();
  std::vector<Update> fill;
  for (size_t i = 0; i < entries; ++i) fill.push_back(Fill(i, "value " + std::to_string(i)));
  if (Status s = ledger.StageAll(std::move(fill)); !s.ok()) return s;
  if (auto c = ledger.Commit(); !c.has_value()) return c.error();
  constexpr int kVersions = 64;
  // The values are made before counting: they are what the caller hands in.
  std::vector<std::vector<Update>> batches;
  for (int v = 0; v < kVersions; ++v) {
    std::vector<Update> batch;
    for (size_t k = 0; k < 5; ++k) {
      batch.push_back(
          Fill((static_cast<size_t>(v) * 131 + k * 997) % entries, "changed " + std::to_string(v)));
    }
    batches.push_back(std::move(batch));
  }
  int64_t before = g_live_bytes.load();
  for (int v = 0; v < kVersions; ++v) {
    clock.Advance(1000);
    if (Status s = ledger.StageAll(std::move(batches[static_cast<size_t>(v)])); !s.ok()) return s;
    if (auto c = ledger.Commit(); !c.has_value()) return c.error();
  }
  int64_t after = g_live_bytes.load();
  return static_cast<double>(after - before) / kVersions;
}

// Live heap bytes one more retained state version costs (the state alone, no
// turn record, no store): ApplyTurn of 5 changed entries on a kept copy.
Result<double> StateBytesPerVersion(size_t entries) {
  LedgerState base;
  TurnRecord fill;
  fill.turn = 1;
  for (size_t i = 0; i < entries; ++i)
    fill.updates.push_back(Fill(i, "value " + std::to_string(i)));
  if (Status s = ApplyTurn(base, fill); !s.ok()) return s;
  constexpr int kVersions = 64;
  std::vector<TurnRecord> turns;
  for (int v = 0; v < kVersions; ++v) {
    TurnRecord t;
    t.turn = static_cast<uint64_t>(v) + 2;
    for (size_t k = 0; k < 5; ++k) {
      t.updates.push_back(
          Fill((static_cast<size_t>(v) * 131 + k * 997) % entries, "changed " + std::to_string(v)));
    }
    turns.push_back(std::move(t));
  }
  std::vector<LedgerState> kept;
  kept.reserve(kVersions + 1);
  kept.push_back(base);
  int64_t before = g_live_bytes.load();
  for (int v = 0; v < kVersions; ++v) {
    LedgerState next = kept.back();
    if (Status s = ApplyTurn(next, turns[static_cast<size_t>(v)]); !s.ok()) return s;
    kept.push_back(std::move(next));
  }
  return static_cast<double>(g_live_bytes.load() - before) / kVersions;
}

}  // namespace

int main(int argc, char** argv) {
  int turns = 300;
  std::string rules = (std::filesystem::path(TASKLEDGER_SOURCE_DIR) / "rules" / "retail").string();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--turns" && i + 1 < argc) {
      turns = std::atoi(argv[++i]);
    } else if (a == "--rules" && i + 1 < argc) {
      rules = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_turn [--turns N] [--rules DIR]\n");
      return 2;
    }
  }
  auto loaded = RulePack::Load(rules);
  if (!loaded.has_value()) {
    std::fprintf(stderr, "bench_turn: rules %s: %s\n", rules.c_str(),
                 loaded.error().ToString().c_str());
    return 1;
  }
  std::shared_ptr<const RulePack> pack = loaded.value();
  auto small = Run(pack, 10, turns);
  auto large = Run(pack, 10'000, turns);
  auto bytes = BytesPerVersion(10'000);
  auto state_bytes = StateBytesPerVersion(10'000);
  for (const Status* s :
       {small.has_value() ? nullptr : &small.error(), large.has_value() ? nullptr : &large.error(),
        bytes.has_value() ? nullptr : &bytes.error()}) {
    if (s != nullptr) {
      std::fprintf(stderr, "bench_turn: %s\n", s->ToString().c_str());
      return 1;
    }
  }
  std::printf("small: %d/%d writes allowed; large: %d/%d\n", small.value().allowed, turns,
              large.value().allowed, turns);
  std::printf(
      "{\"turns\":%d,\"turn_p50_us_10\":%.1f,\"turn_p50_us_10000\":%.1f,\"turn_ratio\":%.2f,"
      "\"check_p50_us_10\":%.2f,\"check_p50_us_10000\":%.2f,\"bytes_per_version_10000\":%.0f,"
      "\"state_bytes_per_version_10000\":%.0f,\"write_allowed\":%d}\n",
      turns, small.value().turn_p50_us, large.value().turn_p50_us,
      large.value().turn_p50_us / small.value().turn_p50_us, small.value().check_p50_us,
      large.value().check_p50_us, bytes.value(), state_bytes.value(), large.value().allowed);
  return 0;
}
