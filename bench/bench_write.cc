// bench_write: what one gated write costs through Session on Redis, with the
// command ledger on the same Redis: the policy decision, the command's
// reservation, the write-ahead commit of the turn, the lease and the settled
// outcome (Session::HandleToolCall with a tool that does nothing), against
// the floor of one bare PING, measured interleaved. Two forms of the write:
//   deferred  HandleToolCall alone, as a loop runs it: the settle is sent and
//             its answer read at the next write (session.h "Deferred
//             settle"); the write timed is the second of two back to back,
//             so reading the first one's answer is inside its time;
//   flushed   HandleToolCall + Session::Flush(): the settle's answer awaited
//             before the write counts as done (what every write cost before
//             the settle was deferred).
// Round trips are counted on the server with MONITOR (redis-cli), top-level
// commands only: what a Redis function runs inside itself is not a round
// trip. write_commands is what a write sends; write_round_trips what a
// deferred write awaits (its commands minus the settle, whose answer it does
// not wait for); flushed_write_round_trips what a flushed write awaits (all).
//
// Where a write's time goes, from a phase of deferred writes alone (no
// PINGs): the client's CPU per write (getrusage, user + system: the kernel's
// share of sending on loopback included) and the server's (INFO cpu of the
// server process, all its threads, AOF writes included), in microseconds (-1:
// the server did not say); and the same for one bare PING, the cost of a
// round trip by itself. Only the totals: the user/system split is apportioned
// by ticks and swings from run to run.
//
// Usage: bench_write --url redis://HOST:PORT [--samples N] [--counted N]
// The last line of output is one JSON object:
// {"write_round_trips":..,"write_commands":..,"flushed_write_round_trips":..,
//  "end_turn_round_trips":..,"write_p50_us":..,"write_p99_us":..,
//  "write_after_settle_p50_us":..,"flushed_write_p50_us":..,"flushed_write_p99_us":..,"ping_p50_us":..,
//  "write_to_ping_p50":..,"flushed_write_to_ping_p50":..,"client_cpu_us":..,
//  "server_cpu_us":..,"ping_client_cpu_us":..,"ping_server_cpu_us":..}
// Single-threaded.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "taskledger/commands/redis_command_store.h"
#include "taskledger/ledger/redis_store.h"
#include "taskledger/redis/client.h"
#include "taskledger/session/session.h"

using namespace taskledger;
using Steady = std::chrono::steady_clock;

namespace {

int Fail(const char* what, const Status& s) {
  std::fprintf(stderr, "bench_write: %s: %s\n", what, s.ToString().c_str());
  return 1;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t idx = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[idx];
}

std::shared_ptr<const RulePack> Pack() {
  auto pack = RulePack::FromFiles(
      {{"pack.json",
        R"({"name": "bench", "tools": {"writes": ["ship"]}, "unknown_tools": "deny"})"},
       {"bench.lua", R"(
rule { id = "bench.ship", tools = {"ship"}, check = function(call, ledger) return allow() end })"}});
  if (!pack) return nullptr;
  return std::move(pack).value();
}

// Top-level commands MONITOR saw in `path` (lines of a Redis function's own
// calls say "lua]"), without the marker that ends the counted phase.
int CountCommands(const std::string& path, const std::string& marker) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find(marker) != std::string::npos) break;
    if (line.find('"') != std::string::npos && line.find("lua]") == std::string::npos) ++n;
  }
  return n;
}

// CPU time in microseconds, user and system.
struct Cpu {
  double user = -1, sys = -1;
  bool known() const { return user >= 0 && sys >= 0; }
};

// This process's CPU time so far.
Cpu ClientCpu() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto us = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e6 + t.tv_usec; };
  return {us(u.ru_utime), us(u.ru_stime)};
}

// The server's CPU time so far (INFO cpu: used_cpu_user, used_cpu_sys);
// unknown when the reply does not hold them.
Cpu ServerCpu(internal::RedisClient& client) {
  auto info = client.Command({"INFO", "cpu"});
  if (!info || info->is_error()) return {};
  auto field = [&](const std::string& name) {
    const size_t at = info->str().find(name + ":");
    if (at == std::string::npos) return -1.0;
    return std::strtod(info->str().c_str() + at + name.size() + 1, nullptr) * 1e6;
  };
  return {field("used_cpu_user"), field("used_cpu_sys")};
}

}  // namespace

int main(int argc, char** argv) {
  std::string url;
  int samples = 2000, counted = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--url") url = argv[i + 1];
    if (flag == "--samples") samples = std::atoi(argv[i + 1]);
    if (flag == "--counted") counted = std::atoi(argv[i + 1]);
  }
  if (url.empty()) {
    std::fprintf(stderr,
                 "usage: bench_write --url redis://HOST:PORT [--samples N] [--counted N]\n");
    return 2;
  }
  RedisOptions options;
  options.url = url;
  auto store = OpenRedisStore(options);
  if (!store) return Fail("open store", store.error());
  auto commands = OpenRedisCommandStore(options);
  if (!commands) return Fail("open command store", commands.error());
  auto endpoint = internal::ParseRedisUrl(url);
  if (!endpoint) return Fail("url", endpoint.error());
  internal::RedisClient ping(*endpoint, {});
  std::shared_ptr<const RulePack> pack = Pack();
  if (!pack) return Fail("pack", Status::Internal("the bench pack does not load"));

  const std::string stamp =
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  SessionOptions session_options;
  session_options.commands.store = commands->get();
  int settles_sent = 0;  // deferred settles: sent, answer read at the next write
  session_options.commands.observer = [&settles_sent](std::string_view point, const Command&) {
    if (point == "settle_sent") ++settles_sent;
  };
  auto opened = Session::Open(**store, {"bench", "write-" + stamp}, pack, session_options);
  if (!opened) return Fail("open session", opened.error());
  Session& session = **opened;
  int item = 0;
  auto tool = [](const ProposedCall& c) -> Result<ToolOutput> {
    return ToolOutput{{{"id", c.arguments["item"]}}, false};
  };
  auto write = [&] {
    ++item;
    CallResult r =
        session.HandleToolCall({"c" + std::to_string(item), "ship", {{"item", item}}}, tool);
    return r.executed && r.command && r.command->state == CommandState::kSucceeded;
  };
  auto flushed_write = [&] { return write() && session.Flush().ok(); };

  // Round trips: MONITOR while `counted` writes run, then one EndTurn.
  const std::string log = "/tmp/taskledger-bench-write-" + stamp + ".log";
  // Stopped on every way out: a write that fails must not leave redis-cli
  // holding the caller's stderr (a `scripts/bench write | tail` would hang).
  struct MonitorChild {
    pid_t pid = -1;
    std::string log;
    void Stop() {
      if (pid <= 0) return;
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
      pid = -1;
    }
    ~MonitorChild() {
      Stop();
      std::remove(log.c_str());
    }
  } monitor{::fork(), log};
  if (monitor.pid == 0) {
    if (!std::freopen(log.c_str(), "w", stdout)) ::_exit(127);
    ::execlp("redis-cli", "redis-cli", "-u", url.c_str(), "monitor", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string marker = "bench-write-marker-" + stamp;
  for (int i = 0; i < counted; ++i) {
    if (!write()) return Fail("write", Status::Internal("a write did not succeed"));
  }
  const int deferred_settles = settles_sent;
  // The last deferred settle is read by the first flushed write.
  (void)ping.Command({"ECHO", marker + "-writes"});
  for (int i = 0; i < counted; ++i) {
    if (!flushed_write()) return Fail("write", Status::Internal("a flushed write did not succeed"));
  }
  (void)ping.Command({"ECHO", marker + "-flushed"});
  if (auto v = session.EndTurn(); !v) return Fail("end turn", v.error());
  (void)ping.Command({"ECHO", marker + "-end"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  monitor.Stop();
  const int write_commands = CountCommands(log, marker + "-writes");
  const int flushed_commands = CountCommands(log, marker + "-flushed") - write_commands - 1;
  const int all_commands = CountCommands(log, marker + "-end");
  if (write_commands == 0) return Fail("monitor", Status::Unavailable("MONITOR saw nothing"));

  // Latency, interleaved with PING. Each round: PING (the server idle: the
  // round before ended with a Flush), two deferred writes back to back (the
  // first with no settle outstanding: write_after_settle_p50_us, a loop with
  // work between writes; the second reads the first one's settle answer
  // before its own call, the dearer case: write_p50_us), an untimed Flush, a
  // flushed write.
  std::vector<double> pings, writes, settled_writes, flushed;
  auto us_since = [](Steady::time_point t0) {
    return std::chrono::duration<double, std::micro>(Steady::now() - t0).count();
  };
  for (int i = 0; i < samples; ++i) {
    auto t0 = Steady::now();
    (void)ping.Command({"PING"});
    pings.push_back(us_since(t0));
    t0 = Steady::now();
    if (!write()) return Fail("write", Status::Internal("a write did not succeed"));
    settled_writes.push_back(us_since(t0));
    t0 = Steady::now();
    if (!write()) return Fail("write", Status::Internal("a write did not succeed"));
    writes.push_back(us_since(t0));
    if (Status s = session.Flush(); !s.ok()) return Fail("flush", s);
    t0 = Steady::now();
    if (!flushed_write()) return Fail("write", Status::Internal("a flushed write did not succeed"));
    flushed.push_back(us_since(t0));
    if (i % 32 == 31) {
      if (auto v = session.EndTurn(); !v) return Fail("end turn", v.error());
    }
  }
  if (auto v = session.EndTurn(); !v) return Fail("end turn", v.error());

  // CPU per write, client and server, over writes alone.
  const int cpu_writes = std::max(samples / 2, 1);
  const Cpu server_before = ServerCpu(ping), client_before = ClientCpu();
  for (int i = 0; i < cpu_writes; ++i) {
    if (!write()) return Fail("write", Status::Internal("a write did not succeed"));
    if (i % 64 == 63) {
      if (auto v = session.EndTurn(); !v) return Fail("end turn", v.error());
    }
  }
  const Cpu client_after = ClientCpu(), server_after = ServerCpu(ping);
  // The same for bare PINGs: what one round trip costs both sides by itself.
  const Cpu ping_server_before = ServerCpu(ping), ping_client_before = ClientCpu();
  for (int i = 0; i < cpu_writes; ++i) (void)ping.Command({"PING"});
  const Cpu ping_client_after = ClientCpu(), ping_server_after = ServerCpu(ping);
  // Per write (or PING), user + system; -1 when the server did not say.
  auto per_write = [&](const Cpu& before, const Cpu& after) {
    if (!before.known() || !after.known()) return -1.0;
    return (after.user + after.sys - before.user - before.sys) / cpu_writes;
  };
  (void)session.EndTurn();
  (void)(*commands)->DropRun(*session.run());
  (void)(*store)->DropConversation(session.id());

  const double ping_p50 = Percentile(pings, 0.5), write_p50 = Percentile(writes, 0.5);
  const double flushed_p50 = Percentile(flushed, 0.5);
  std::printf("%d writes counted of each form, %d latency samples of each\n", counted, samples);
  std::printf(
      "{\"write_round_trips\":%.2f,\"write_commands\":%.2f,\"flushed_write_round_trips\":%.2f,"
      "\"end_turn_round_trips\":%d,\"write_p50_us\":%.1f,\"write_p99_us\":%.1f,"
      "\"write_after_settle_p50_us\":%.1f,\"flushed_write_p50_us\":%.1f,\"flushed_write_p99_us\":%."
      "1f,\"ping_p50_us\":%.1f,"
      "\"write_to_ping_p50\":%.2f,\"flushed_write_to_ping_p50\":%.2f,"
      "\"client_cpu_us\":%.1f,\"server_cpu_us\":%.1f,"
      "\"ping_client_cpu_us\":%.1f,\"ping_server_cpu_us\":%.1f}\n",
      static_cast<double>(write_commands - deferred_settles) / counted,
      static_cast<double>(write_commands) / counted,
      static_cast<double>(flushed_commands) / counted,
      all_commands - write_commands - flushed_commands - 2, write_p50, Percentile(writes, 0.99),
      Percentile(settled_writes, 0.5), flushed_p50, Percentile(flushed, 0.99), ping_p50,
      ping_p50 > 0 ? write_p50 / ping_p50 : 0.0, ping_p50 > 0 ? flushed_p50 / ping_p50 : 0.0,
      per_write(client_before, client_after), per_write(server_before, server_after),
      per_write(ping_client_before, ping_client_after),
      per_write(ping_server_before, ping_server_after));
  return 0;
}
