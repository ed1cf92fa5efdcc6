// bench_replay: `taskledger replay` of a trace on the memory store, in one
// process, several rounds (issue #16: replay >= 150,000 events/s). Each round
// reads and parses the trace with TraceReader and replays every conversation
// through its own Session, as cli/src/replay.cc does (one PolicyChecker and
// one compiled extract.json for the run, a fresh memory store per round). A
// parse-only round (TraceReader alone) is timed too, so the cost of reading
// the input can be told from the cost of the engine. Single-threaded.
//
// Wall-clock rates move with the load of a shared machine; the per-round CPU
// time of this thread (CLOCK_THREAD_CPUTIME_ID) moves much less, so the JSON
// has both. Medians over the rounds.
//
// Usage: bench_replay [--rounds N] [--trace FILE] [--rules DIR]
// The last stdout line is JSON: {"events":..,"rounds":..,"events_per_s":..,
// "events_per_cpu_s":..,"parse_events_per_s":..,"parse_events_per_cpu_s":..,
// "parse_share_cpu":..,"goal_events_per_s":150000}
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "taskledger/ledger/memory_store.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/checker.h"
#include "taskledger/session/replay.h"
#include "taskledger/session/session.h"
#include "taskledger/session/trace_reader.h"

using namespace taskledger;

namespace {

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Round {
  uint64_t events = 0;
  double wall = 0;
  double cpu = 0;
};

// One pass over the trace; with `session_options` null, only reads and parses it.
Result<Round> Pass(const std::string& trace, const std::shared_ptr<const RulePack>& pack,
                   const SessionOptions* session_options) {
  auto store = NewMemoryStore();
  auto reader = TraceReader::Open(trace);
  if (!reader.has_value()) return reader.error();
  Round r;
  const double wall = WallSeconds();
  const double cpu = CpuSeconds();
  while (auto line = (*reader)->Next()) {
    if (!line->conversation.has_value()) {
      return Status::InvalidArgument("line " + std::to_string(line->line) + ": " +
                                     line->conversation.error().ToString());
    }
    TraceConversation& c = line->conversation.value();
    if (session_options == nullptr) {
      r.events += c.events.size();
      continue;
    }
    auto session = Session::Open(*store, {"bench", c.conversation}, pack, *session_options);
    if (!session.has_value()) return session.error();
    // As `taskledger replay` does: the line's outputs move into the session.
    auto replay = ReplayConversation(*session.value(), std::move(c));
    if (!replay.has_value()) return replay.error();
    r.events += replay.value().events;
  }
  r.wall = WallSeconds() - wall;
  r.cpu = CpuSeconds() - cpu;
  return r;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int Fail(const Status& s) {
  std::fprintf(stderr, "bench_replay: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  const std::filesystem::path root = std::filesystem::path(TASKLEDGER_SOURCE_DIR);
  std::string trace = (root / "tests" / "data" / "tau-bench-retail" / "retail_gold.jsonl").string();
  std::string rules = (root / "rules" / "retail").string();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--trace" && i + 1 < argc) {
      trace = argv[++i];
    } else if (a == "--rules" && i + 1 < argc) {
      rules = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_replay [--rounds N] [--trace FILE] [--rules DIR]\n");
      return 2;
    }
  }
  auto pack = RulePack::Load(rules);
  if (!pack.has_value()) return Fail(pack.error());
  auto checker = PolicyChecker::Create(pack.value());
  if (!checker.has_value()) return Fail(checker.error());
  auto extraction = CompileExtractionRules(*pack.value());
  if (!extraction.has_value()) return Fail(extraction.error());
  SessionOptions options;
  options.checker = checker.value().get();
  options.extraction_rules = extraction.value();
  options.call_result_texts = false;  // the replay reads the decisions, not the texts

  std::vector<double> rate, cpu_rate, parse_rate, parse_cpu_rate, share;
  uint64_t events = 0;
  for (int i = 0; i < rounds; ++i) {
    auto parsed = Pass(trace, pack.value(), nullptr);
    if (!parsed.has_value()) return Fail(parsed.error());
    auto replayed = Pass(trace, pack.value(), &options);
    if (!replayed.has_value()) return Fail(replayed.error());
    const Round& p = parsed.value();
    const Round& r = replayed.value();
    events = r.events;
    rate.push_back(static_cast<double>(r.events) / r.wall);
    cpu_rate.push_back(static_cast<double>(r.events) / r.cpu);
    parse_rate.push_back(static_cast<double>(p.events) / p.wall);
    parse_cpu_rate.push_back(static_cast<double>(p.events) / p.cpu);
    share.push_back(p.cpu / r.cpu);
    std::fprintf(stderr, "round %d: %.0f events/s (%.0f per CPU s), parse alone %.0f events/s\n",
                 i + 1, rate.back(), cpu_rate.back(), parse_rate.back());
  }
  std::printf(
      "{\"events\":%llu,\"rounds\":%d,\"events_per_s\":%.0f,\"events_per_cpu_s\":%.0f,"
      "\"parse_events_per_s\":%.0f,\"parse_events_per_cpu_s\":%.0f,\"parse_share_cpu\":%.3f,"
      "\"goal_events_per_s\":150000}\n",
      static_cast<unsigned long long>(events), rounds, Median(rate), Median(cpu_rate),
      Median(parse_rate), Median(parse_cpu_rate), Median(share));
  return 0;
}
