// bench_replay: `taskledger replay` of a trace on the memory store, in one
// process, several rounds (issue #16: replay >= 150,000 events/s). Each round
// reads and parses the trace with TraceReader and replays every conversation
// through its own Session, as cli/src/replay.cc does (one PolicyChecker and
// one compiled extract.json for the run, a fresh memory store per round). A
// parse-only round (TraceReader alone) is timed too, so the cost of reading
// the input can be told from the cost of the engine. This part is one thread.
//
// Each round then runs the built CLI, `taskledger replay TRACE --rules DIR
// --json`, as the issue measures it: once with --jobs 1 and once with --jobs
// N (default: the hardware threads, the CLI's own default), and takes its
// events_per_s and the child's CPU seconds (user + system).
//
// Wall-clock rates move with the load of a shared machine; the per-round CPU
// time of this thread (CLOCK_THREAD_CPUTIME_ID) moves much less, so the JSON
// has both. Medians over the rounds.
//
// Usage: bench_replay [--rounds N] [--trace FILE] [--rules DIR] [--jobs N] [--cli PATH]
// The last stdout line is JSON: {"events":..,"rounds":..,"events_per_s":..,
// "events_per_cpu_s":..,"parse_events_per_s":..,"parse_events_per_cpu_s":..,
// "parse_share_cpu":..,"cli_jobs":N,"cli_events_per_s":..,"cli_cpu_s":..,
// "cli_jobs1_events_per_s":..,"cli_jobs1_cpu_s":..,"goal_events_per_s":150000}
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

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

double ChildrenCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

struct CliRound {
  double events_per_s = 0;
  double cpu = 0;  // the child's user + system seconds
};

// One `taskledger replay --json` run of the CLI: its events_per_s (the last
// stdout line) and CPU time. Any exit code but 0 is an error.
Result<CliRound> RunCli(const std::string& cli, const std::string& trace, const std::string& rules,
                        int jobs) {
  int out[2];
  if (pipe(out) != 0) return Status::Internal("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  const std::string jobs_text = std::to_string(jobs);
  std::vector<std::string> args = {cli,   "replay", trace,    "--rules",
                                   rules, "--json", "--jobs", jobs_text};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const double cpu = ChildrenCpuSeconds();
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, cli.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (spawned != 0) {
    close(out[0]);
    return Status::NotFound("cannot run " + cli + " (build the taskledger target, or --cli PATH)");
  }
  std::string text;
  char buffer[65536];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::Internal(cli + " replay did not exit 0");
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const nlohmann::json summary = nlohmann::json::parse(
      text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1), nullptr,
      false);
  if (!summary.is_object() || !summary.contains("events_per_s")) {
    return Status::Internal(cli + " replay printed no JSON summary");
  }
  return CliRound{summary["events_per_s"].get<double>(), ChildrenCpuSeconds() - cpu};
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
  // The CLI built next to this bench (bench/CMakeLists.txt makes it a dependency).
  std::string cli = TASKLEDGER_CLI;
  const unsigned hardware = std::thread::hardware_concurrency();
  int jobs = hardware == 0 ? 1 : static_cast<int>(hardware);  // the CLI's default
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--trace" && i + 1 < argc) {
      trace = argv[++i];
    } else if (a == "--rules" && i + 1 < argc) {
      rules = argv[++i];
    } else if (a == "--jobs" && i + 1 < argc) {
      jobs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--cli" && i + 1 < argc) {
      cli = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: bench_replay [--rounds N] [--trace FILE] [--rules DIR] [--jobs N] "
                   "[--cli PATH]\n");
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
  std::vector<double> cli_rate, cli_cpu, cli1_rate, cli1_cpu;
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
    auto one = RunCli(cli, trace, rules, 1);
    if (!one.has_value()) return Fail(one.error());
    auto many = RunCli(cli, trace, rules, jobs);
    if (!many.has_value()) return Fail(many.error());
    cli1_rate.push_back(one.value().events_per_s);
    cli1_cpu.push_back(one.value().cpu);
    cli_rate.push_back(many.value().events_per_s);
    cli_cpu.push_back(many.value().cpu);
    std::fprintf(stderr,
                 "round %d: %.0f events/s (%.0f per CPU s), parse alone %.0f events/s; CLI "
                 "--jobs 1 %.0f events/s (%.3f CPU s), --jobs %d %.0f events/s (%.3f CPU s)\n",
                 i + 1, rate.back(), cpu_rate.back(), parse_rate.back(), cli1_rate.back(),
                 cli1_cpu.back(), jobs, cli_rate.back(), cli_cpu.back());
  }
  std::printf(
      "{\"events\":%llu,\"rounds\":%d,\"events_per_s\":%.0f,\"events_per_cpu_s\":%.0f,"
      "\"parse_events_per_s\":%.0f,\"parse_events_per_cpu_s\":%.0f,\"parse_share_cpu\":%.3f,"
      "\"cli_jobs\":%d,\"cli_events_per_s\":%.0f,\"cli_cpu_s\":%.3f,"
      "\"cli_jobs1_events_per_s\":%.0f,\"cli_jobs1_cpu_s\":%.3f,\"goal_events_per_s\":150000}\n",
      static_cast<unsigned long long>(events), rounds, Median(rate), Median(cpu_rate),
      Median(parse_rate), Median(parse_cpu_rate), Median(share), jobs, Median(cli_rate),
      Median(cli_cpu), Median(cli1_rate), Median(cli1_cpu));
  return 0;
}
