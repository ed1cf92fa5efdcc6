// bench_load: N concurrent agent sessions (one thread each) over one Redis
// for a bounded time. Each turn is what an agent loop does: a user message,
// a read tool call through the gate with extraction, and EndTurn. Sessions
// share conversations in groups (--share, default 2), so concurrent writers
// race for the same versions and there are real conflicts to
// resolve (Rebase, then EndTurn again). At the end every conversation is
// read back and checked: each acknowledged turn is there exactly once.
//
// Usage: bench_load [--url redis://127.0.0.1:PORT] [--sessions N] [--seconds S]
//                   [--share K] [--rules DIR] [--timeout-ms T] [--think-ms T]
// Without --url it starts a throw-away redis-server (no persistence) on a free
// loopback port and stops it at exit. The last line of output is one JSON
// object: {"sessions":..,"conversations":..,"seconds":..,"turn_seconds":..,
// "turns":..,"turns_per_s":..,"turn_p50_us":..,"turn_p99_us":..,"conflicts_resolved":..,
// "lost_turns":0,"duplicated_turns":0,"unresolved_conflicts":0,"errors":0,"read_head_ms":..,
// "state_records":..}: read_head_ms is the slowest ReadHead of a conversation
// after the run (what reopening it costs: its newest snapshot plus the turns
// after it), state_records the largest state's entries plus recorded calls.
// Exits 1 if any turn was lost or duplicated, a conflict stayed unresolved
// or a session failed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "taskledger/ledger/redis_store.h"
#include "taskledger/session/session.h"

using namespace taskledger;
using SteadyClock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string url;
  int sessions = 8;
  double seconds = 10;
  int share = 2;
  std::string rules = (std::filesystem::path(TASKLEDGER_SOURCE_DIR) / "rules" / "retail").string();
  int timeout_ms = 2000;
  int think_ms = 0;
};

struct SessionStats {
  std::vector<double> turn_us;
  std::vector<std::string> acknowledged;  // call ids of committed turns
  uint64_t conflicts_resolved = 0;        // turns that committed after at least one Conflict
  uint64_t max_attempts = 0;              // most EndTurn calls one turn needed
  uint64_t unresolved = 0;                // turns abandoned on repeated Conflict
  std::string last_conflict;              // the Conflict that made this session stop
  std::string error;
  SteadyClock::time_point last_turn{};  // when its last acknowledged turn ended
};

// A throw-away redis-server for the run; killed in the destructor.
class OwnRedis {
 public:
  bool Start() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      return false;
    }
    port_ = ntohs(a.sin_port);
    close(fd);
    char dir_template[] = "/tmp/taskledger-load-XXXXXX";
    if (mkdtemp(dir_template) == nullptr) return false;
    dir_ = dir_template;
    pid_ = fork();
    if (pid_ == 0) {
      const std::string port = std::to_string(port_);
      execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1", "--dir",
             dir_.c_str(), "--save", "", "--appendonly", "no", "--logfile", "redis.log",
             static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid_ > 0;
  }
  ~OwnRedis() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string dir_;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// One session's loop. Call ids are "s<session>-<n>", unique in the run, so
// the read-back can find each acknowledged turn.
void RunSession(Store& store, const std::shared_ptr<const RulePack>& pack, const ConversationId& id,
                int session, int think_ms, SteadyClock::time_point end, SessionStats& stats) {
  auto opened = Session::Open(store, id, pack);
  if (!opened.has_value()) {
    stats.error = "Open: " + opened.error().ToString();
    return;
  }
  Session& s = *opened.value();
  const ToolExecutor tools = [](const ProposedCall& call) -> Result<ToolOutput> {
    const std::string order = call.arguments.value("order_id", "");
    return ToolOutput{
        {{"order_id", order},
         {"user_id", "u_1"},
         {"status", "pending"},
         {"items", {{{"item_id", "i1"}, {"product_id", "p1"}, {"price", 12.5}}}},
         {"payment_history", {{{"payment_method_id", "gift_card_1"}, {"amount", 12.5}}}}},
        false};
  };
  for (int n = 1; SteadyClock::now() < end; ++n) {
    const auto start = SteadyClock::now();
    const std::string call_id = "s" + std::to_string(session) + "-" + std::to_string(n);
    const std::string order = "#W" + std::to_string(session * 100000 + n);
    if (Status st = s.RecordUserMessage("what is the status of order " + order + "?"); !st.ok()) {
      stats.error = "RecordUserMessage: " + st.ToString();
      return;
    }
    s.HandleToolCall(ProposedCall{call_id, "get_order_details", {{"order_id", order}}}, tools);
    // The model's latency between a tool result and the end of the turn.
    if (think_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(think_ms));
    // On Conflict the other session of the conversation committed first:
    // rebase on its turn and commit again, as an agent loop does when its
    // decisions still hold (a read-only call's always do). Retried until
    // it lands; given up only 10 s after the run's end.
    bool committed = false;
    for (uint64_t attempt = 1; !committed; ++attempt) {
      auto v = s.EndTurn();
      if (v.has_value()) {
        committed = true;
        if (attempt > 1) ++stats.conflicts_resolved;
        stats.max_attempts = std::max(stats.max_attempts, attempt);
      } else if (v.error().code() != StatusCode::kConflict) {
        stats.error = "EndTurn: " + v.error().ToString();
        return;
      } else if (SteadyClock::now() > end + std::chrono::seconds(10)) {
        stats.last_conflict = v.error().ToString();
        break;
      } else if (Status rebased = s.Rebase(); !rebased.ok()) {
        stats.error = "Rebase: " + rebased.ToString();
        return;
      }
    }
    if (!committed) {
      // Session has no way to drop a staged turn: this session stops here.
      ++stats.unresolved;
      return;
    }
    stats.acknowledged.push_back(call_id);
    stats.last_turn = SteadyClock::now();
    stats.turn_us.push_back(
        std::chrono::duration<double, std::micro>(stats.last_turn - start).count());
  }
}

bool ParseArgs(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return false;
    const char* v = argv[i + 1];
    if (flag == "--url")
      o.url = v;
    else if (flag == "--sessions")
      o.sessions = std::atoi(v);
    else if (flag == "--seconds")
      o.seconds = std::atof(v);
    else if (flag == "--share")
      o.share = std::atoi(v);
    else if (flag == "--rules")
      o.rules = v;
    else if (flag == "--timeout-ms")
      o.timeout_ms = std::atoi(v);
    else if (flag == "--think-ms")
      o.think_ms = std::atoi(v);
    else
      return false;
  }
  return o.sessions > 0 && o.seconds > 0 && o.share > 0 && o.timeout_ms > 0 && o.think_ms >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, o)) {
    std::fprintf(
        stderr,
        "usage: bench_load [--url redis://HOST:PORT] [--sessions N] [--seconds S] [--share K] "
        "[--rules DIR] [--timeout-ms T] [--think-ms T]\n");
    return 2;
  }
  OwnRedis own;
  if (o.url.empty()) {
    if (!own.Start()) {
      std::fprintf(stderr, "bench_load: cannot start redis-server\n");
      return 1;
    }
    o.url = own.url();
  }
  auto pack = RulePack::Load(o.rules);
  if (!pack.has_value()) {
    std::fprintf(stderr, "bench_load: rules %s: %s\n", o.rules.c_str(),
                 pack.error().ToString().c_str());
    return 1;
  }
  RedisOptions ro;
  ro.url = o.url;
  ro.connect_timeout = std::chrono::milliseconds(o.timeout_ms);
  ro.command_timeout = std::chrono::milliseconds(o.timeout_ms);
  Result<std::unique_ptr<Store>> store = Status::Unavailable("not opened");
  for (int attempt = 0; attempt < 100 && !store.has_value(); ++attempt) {
    store = OpenRedisStore(ro);
    if (!store.has_value()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!store.has_value()) {
    std::fprintf(stderr, "bench_load: %s: %s\n", o.url.c_str(), store.error().ToString().c_str());
    return 1;
  }

  // A fresh tenant per run, so runs against a shared server never mix.
  const std::string tenant =
      "load-" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  const int conversations = (o.sessions + o.share - 1) / o.share;
  std::vector<SessionStats> stats(o.sessions);
  std::vector<std::thread> threads;
  const auto start = SteadyClock::now();
  const auto end = start + std::chrono::duration_cast<SteadyClock::duration>(
                               std::chrono::duration<double>(o.seconds));
  threads.reserve(o.sessions);
  for (int i = 0; i < o.sessions; ++i) {
    threads.emplace_back(RunSession, std::ref(*store.value()), pack.value(),
                         ConversationId{tenant, "c" + std::to_string(i / o.share)}, i, o.think_ms,
                         end, std::ref(stats[i]));
  }
  for (std::thread& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(SteadyClock::now() - start).count();
  // turns/s is over the turns themselves: from the start to the end of the
  // last acknowledged turn. `elapsed` also holds closing the sessions, which
  // frees each one's whole state (O(ledger), about 0.35 s after a 9 s run
  // here): a cost of the end of a conversation, not of its turns.
  SteadyClock::time_point last_turn = start;
  for (const SessionStats& st : stats) last_turn = std::max(last_turn, st.last_turn);
  const double turn_seconds =
      std::max(1e-3, std::chrono::duration<double>(last_turn - start).count());

  // Read every conversation back: each acknowledged call id exactly once.
  std::vector<double> all_us;
  std::map<std::string, int> expected;  // call id -> times found
  uint64_t turns = 0, conflicts = 0, unresolved = 0, errors = 0, max_attempts = 0;
  for (int i = 0; i < o.sessions; ++i) {
    all_us.insert(all_us.end(), stats[i].turn_us.begin(), stats[i].turn_us.end());
    for (const std::string& id : stats[i].acknowledged) expected[id] = 0;
    turns += stats[i].acknowledged.size();
    conflicts += stats[i].conflicts_resolved;
    unresolved += stats[i].unresolved;
    max_attempts = std::max(max_attempts, stats[i].max_attempts);
    if (!stats[i].last_conflict.empty()) {
      std::fprintf(stderr, "bench_load: session %d gave up: %s\n", i,
                   stats[i].last_conflict.c_str());
    }
    if (!stats[i].error.empty()) {
      ++errors;
      std::fprintf(stderr, "bench_load: session %d: %s\n", i, stats[i].error.c_str());
    }
  }
  uint64_t duplicated = 0, foreign = 0;
  double read_head_ms = 0;   // the slowest reopen: ReadHead of a conversation
  size_t state_records = 0;  // the largest state: entries plus recorded calls
  for (int c = 0; c < conversations; ++c) {
    const ConversationId id{tenant, "c" + std::to_string(c)};
    auto head = store.value()->Head(id);
    if (!head.has_value()) {
      ++errors;
      continue;
    }
    if (head.value() == 0) continue;
    const auto read_start = SteadyClock::now();
    auto state = store.value()->ReadHead(id);
    if (!state.has_value() || state.value().version != head.value()) {
      ++errors;
      std::fprintf(stderr, "bench_load: ReadHead of c%d: %s\n", c,
                   state.has_value() ? "not the head's version" : state.error().ToString().c_str());
      continue;
    }
    read_head_ms = std::max(
        read_head_ms,
        std::chrono::duration<double, std::milli>(SteadyClock::now() - read_start).count());
    state_records = std::max(state_records, state.value().size() + state.value().calls.size());
    auto records = store.value()->ReadTurns(id, 1, head.value());
    if (!records.has_value()) {
      ++errors;
      continue;
    }
    for (const TurnRecord& t : records.value()) {
      for (const CallRecord& recorded : t.calls) {
        auto it = expected.find(recorded.call.id);
        if (it == expected.end())
          ++foreign;  // a turn committed but never acknowledged
        else if (++it->second > 1)
          ++duplicated;
      }
    }
    (void)store.value()->DropConversation(id);
  }
  uint64_t lost = 0;
  for (const auto& [id, found] : expected) lost += found == 0;

  std::printf(
      "bench_load: %d sessions over %d conversations for %.1f s: %llu turns, %llu conflicts "
      "resolved\n",
      o.sessions, conversations, elapsed, static_cast<unsigned long long>(turns),
      static_cast<unsigned long long>(conflicts));
  if (foreign > 0) {
    std::printf(
        "bench_load: %llu committed turns were never acknowledged (abandoned after conflicts)\n",
        static_cast<unsigned long long>(foreign));
  }
  std::printf(
      "{\"sessions\":%d,\"conversations\":%d,\"seconds\":%.2f,\"turn_seconds\":%.2f,"
      "\"turns\":%llu,\"turns_per_s\":%.0f,"
      "\"turn_p50_us\":%.0f,\"turn_p99_us\":%.0f,\"conflicts_resolved\":%llu,\"max_commit_"
      "attempts\":%llu,"
      "\"lost_turns\":%llu,"
      "\"duplicated_turns\":%llu,\"unresolved_conflicts\":%llu,\"errors\":%llu,"
      "\"read_head_ms\":%.1f,\"state_records\":%zu}\n",
      o.sessions, conversations, elapsed, turn_seconds, static_cast<unsigned long long>(turns),
      static_cast<double>(turns) / turn_seconds, Percentile(all_us, 0.5), Percentile(all_us, 0.99),
      static_cast<unsigned long long>(conflicts), static_cast<unsigned long long>(max_attempts),
      static_cast<unsigned long long>(lost), static_cast<unsigned long long>(duplicated),
      static_cast<unsigned long long>(unresolved), static_cast<unsigned long long>(errors),
      read_head_ms, state_records);
  return (lost || duplicated || unresolved || errors) ? 1 : 0;
}
