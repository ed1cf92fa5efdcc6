// bench_long: one very long conversation replayed on the memory store (issue
// #16: a conversation's total cost must grow linearly, not quadratically, with
// its length).
//
// The conversation is generated from the tau-bench retail gold trace: the
// events of its first conversation up to its first get_order_details call
// (identifying the user), then N get_order_details calls, each for a new order
// id with the recorded output re-labelled to that id, so every call adds its
// own entries (~16) to the ledger. It is replayed exactly as `taskledger
// replay` does (one commit per call), first with N/4 calls, then with N.
// Single-threaded.
//
// Usage: bench_long [--calls N] [--trace FILE] [--rules DIR]
// The last stdout line is JSON: {"calls":N,"seconds":..,"max_rss_mb":..,
// "calls_quarter":N/4,"seconds_quarter":..,"ratio":..,"entries":..,
// "provenance_queued_mb":..,"provenance_queued_bytes_per_call":..}
// (ratio = seconds / seconds_quarter; 4 is linear; the provenance queue is
// the outputs the lazy index holds unwalked, as no retail rule asks).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "long_conversation.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/session/replay.h"
#include "taskledger/session/session.h"

using namespace taskledger;
using taskledger::bench::GenerateLongConversation;

namespace {

struct Run {
  double seconds = 0;
  size_t entries = 0;
  size_t queued_bytes = 0;  // the provenance queue at the end (never walked: no rule asks)
};

Result<Run> Replay(const std::shared_ptr<const RulePack>& pack, const TraceConversation& trace) {
  auto store = NewMemoryStore();
  auto session = Session::Open(*store, {"bench", trace.conversation}, pack);
  if (!session.has_value()) return session.error();
  auto start = std::chrono::steady_clock::now();
  auto replay = ReplayConversation(*session.value(), trace);
  if (!replay.has_value()) return replay.error();
  Run r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.entries = session.value()->ledger().head().size();
  r.queued_bytes = session.value()->provenance().queued_bytes();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 4000;
  const std::filesystem::path root = std::filesystem::path(TASKLEDGER_SOURCE_DIR);
  std::string trace = (root / "tests" / "data" / "tau-bench-retail" / "retail_gold.jsonl").string();
  std::string rules = (root / "rules" / "retail").string();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--calls" && i + 1 < argc) {
      calls = std::atoi(argv[++i]);
    } else if (a == "--trace" && i + 1 < argc) {
      trace = argv[++i];
    } else if (a == "--rules" && i + 1 < argc) {
      rules = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_long [--calls N] [--trace FILE] [--rules DIR]\n");
      return 2;
    }
  }
  auto loaded = RulePack::Load(rules);
  if (!loaded.has_value()) {
    std::fprintf(stderr, "bench_long: rules: %s\n", loaded.error().ToString().c_str());
    return 1;
  }
  std::shared_ptr<const RulePack> pack = loaded.value();
  const int quarter = std::max(1, calls / 4);
  auto small = GenerateLongConversation(trace, quarter);
  auto large = GenerateLongConversation(trace, calls);
  if (!small.has_value() || !large.has_value()) {
    std::fprintf(stderr, "bench_long: %s\n",
                 (small.has_value() ? large.error() : small.error()).ToString().c_str());
    return 1;
  }
  auto a = Replay(pack, small.value());
  if (!a.has_value()) {
    std::fprintf(stderr, "bench_long: %s\n", a.error().ToString().c_str());
    return 1;
  }
  auto b = Replay(pack, large.value());
  if (!b.has_value()) {
    std::fprintf(stderr, "bench_long: %s\n", b.error().ToString().c_str());
    return 1;
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf(
      "{\"calls\":%d,\"seconds\":%.3f,\"max_rss_mb\":%.1f,\"calls_quarter\":%d,"
      "\"seconds_quarter\":%.3f,\"ratio\":%.2f,\"entries\":%zu,"
      "\"provenance_queued_mb\":%.2f,\"provenance_queued_bytes_per_call\":%.0f}\n",
      calls, b.value().seconds, static_cast<double>(ru.ru_maxrss) / 1024.0, quarter,
      a.value().seconds, b.value().seconds / a.value().seconds, b.value().entries,
      static_cast<double>(b.value().queued_bytes) / (1024.0 * 1024.0),
      static_cast<double>(b.value().queued_bytes) / calls);
  return 0;
}
