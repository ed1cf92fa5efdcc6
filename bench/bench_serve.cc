// bench_serve: what `taskledger serve` adds to a gated call, against the
// same call in process, in one run, interleaved.
//
// - Latency (memory store): a gated read (decide, commit the decision) and
//   a gated write (decide, reserve, write ahead, lease, settle, commit) done
//   in process on a long-lived Session (Authorize / HandleToolCall, then
//   EndTurn), and the same through the service over loopback HTTP with
//   keep-alive (POST /v1/propose; for the write also /v1/outcome), on
//   conversations of 20 reads and 20 writes each. Samples
//   are paired, so added = service - in process per pair: p50 and p99.
// - Throughput: decisions per second from `--clients` client threads, each on
//   its own conversations, against the memory store in this process, and,
//   with --url, against 1 and 2 server processes (forked children, each with
//   its own Service and Listener) over one Redis.
//
// Usage: bench_serve [--url redis://HOST:PORT] [--samples N] [--seconds S]
//                    [--clients C]
// The last line of output is one JSON object:
// {"in_process_p50_us":..,"serve_added_p50_us":..,"serve_added_p99_us":..,
//  "write_in_process_p50_us":..,"write_serve_added_p50_us":..,
//  "write_serve_added_p99_us":..,"decisions_per_s_memory":..,
//  "decisions_per_s_redis_1proc":..,"decisions_per_s_redis_2proc":..}
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "taskledger/commands/memory_command_store.h"
#include "taskledger/commands/redis_command_store.h"
#include "taskledger/http/client.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/ledger/redis_store.h"
#include "taskledger/serve/listener.h"
#include "taskledger/serve/service.h"
#include "taskledger/session/session.h"

using namespace taskledger;
using nlohmann::json;
using Steady = std::chrono::steady_clock;

namespace {

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t idx = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[idx];
}

double Us(Steady::time_point a, Steady::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

std::shared_ptr<const RulePack> Pack() {
  auto pack =
      RulePack::FromFiles({{"pack.json", R"({"name": "bench", "tools": {"read_only": ["get_order"],
          "writes": ["ship"]}, "unknown_tools": "deny"})"},
                           {"bench.lua", R"(
rule { id = "bench.ship", tools = {"ship"}, check = function(call, ledger)
  if ledger.fact("blocked") == true then return deny("blocked") end
  return allow() end })"}});
  if (!pack) {
    std::fprintf(stderr, "bench_serve: pack: %s\n", pack.error().ToString().c_str());
    std::exit(1);
  }
  return std::move(pack).value();
}

// A Service and its Listener serving on a thread, on the given stores.
struct Served {
  std::unique_ptr<serve::Service> service;
  std::unique_ptr<serve::Listener> listener;
  std::thread thread;
  Served(Store& store, CommandStore& commands, int threads) {
    serve::ServiceOptions o;
    o.store = &store;
    o.command_store = &commands;
    o.pack = Pack();
    service = std::move(serve::Service::Create(o)).value();
    serve::ListenerOptions lo;
    lo.worker_threads = threads;
    listener = std::move(serve::Listener::Bind(*service, lo)).value();
    thread = std::thread([this] { (void)listener->Serve(); });
  }
  ~Served() {
    listener->Stop();
    thread.join();
  }
};

std::unique_ptr<http::Client> Connect(int port) {
  auto c = http::Client::Open("http://127.0.0.1:" + std::to_string(port));
  if (!c) std::exit(1);
  return std::move(c).value();
}

json Post(http::Client& c, const std::string& path, const json& body) {
  auto r = c.Send("POST", path, {}, body.dump(), "application/json");
  if (!r || r->status != 200) {
    std::fprintf(stderr, "bench_serve: %s failed: %s\n", path.c_str(),
                 r ? r->body.c_str() : r.error().ToString().c_str());
    std::exit(1);
  }
  return json::parse(r->body);
}

// Decisions per second from `clients` threads spread over `ports`.
double Throughput(const std::vector<int>& ports, int clients, double seconds,
                  const std::string& tag) {
  std::atomic<uint64_t> done{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(clients));
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      auto c = Connect(ports[t % ports.size()]);
      uint64_t i = 0;
      while (!stop) {
        std::string conv = tag + "-" + std::to_string(t) + "-" + std::to_string(i / 200);
        Post(*c, "/v1/propose",
             {{"conversation", conv},
              {"call",
               {{"id", std::to_string(i)}, {"tool", "get_order"}, {"arguments", json::object()}}}});
        ++i;
        done.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  auto start = Steady::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  uint64_t counted = done.load();
  double took = std::chrono::duration<double>(Steady::now() - start).count();
  stop = true;
  for (auto& th : threads) th.join();
  return static_cast<double>(counted) / took;
}

// A forked server process over Redis `url`; returns its pid and port.
pid_t ForkServer(const std::string& url, int& port) {
  int fds[2];
  if (::pipe(fds) != 0) std::exit(1);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    auto store = OpenStore(url);
    RedisOptions ro;
    ro.url = url;
    auto commands = OpenRedisCommandStore(ro);
    if (!store || !commands) ::_exit(1);
    Served served(**store, **commands, 8);
    int p = served.listener->port();
    if (::write(fds[1], &p, sizeof p) != sizeof p) ::_exit(1);
    ::pause();  // until SIGKILL
    ::_exit(0);
  }
  ::close(fds[1]);
  if (::read(fds[0], &port, sizeof port) != sizeof port) std::exit(1);
  ::close(fds[0]);
  return pid;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url;
  int samples = 2000, clients = 4;
  double seconds = 2.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--url") url = argv[i + 1];
    if (a == "--samples") samples = std::atoi(argv[i + 1]);
    if (a == "--seconds") seconds = std::atof(argv[i + 1]);
    if (a == "--clients") clients = std::atoi(argv[i + 1]);
  }
  ::signal(SIGPIPE, SIG_IGN);
  // Server processes first: fork before this process starts any thread.
  std::vector<pid_t> children;
  std::vector<int> redis_ports;
  if (!url.empty()) {
    for (int k = 0; k < 2; ++k) {
      int port = 0;
      children.push_back(ForkServer(url, port));
      redis_ports.push_back(port);
    }
  }

  auto pack = Pack();
  auto mem = NewMemoryStore();
  auto mem_commands = NewMemoryCommandStore();
  // In process: one long-lived session, as a library user keeps it.
  auto inproc_store = NewMemoryStore();
  auto inproc_commands = NewMemoryCommandStore();
  SessionOptions so;
  so.commands.store = inproc_commands.get();
  auto session = std::move(Session::Open(*inproc_store, {"default", "inproc"}, pack, so)).value();
  ContextToolExecutor ship = [](const ProposedCall&, const ToolContext&) -> Result<ToolOutput> {
    return ToolOutput{{{"shipped", true}}, false};
  };
  Served served(*mem, *mem_commands, 8);
  auto client = Connect(served.listener->port());

  std::vector<double> read_in, read_added, write_in, write_added;
  for (int i = 0; i < samples; ++i) {
    const std::string id = std::to_string(i);
    const std::string conv = "lat-" + std::to_string(i / 20);  // 20 reads + 20 writes each
    ProposedCall read{id, "get_order", json::object()};
    ProposedCall write{id, "ship", {{"order_id", "o" + id}}};

    auto t0 = Steady::now();
    (void)session->Authorize(read);
    (void)session->EndTurn();
    auto t1 = Steady::now();
    Post(*client, "/v1/propose",
         {{"conversation", conv},
          {"call", {{"id", id}, {"tool", "get_order"}, {"arguments", json::object()}}}});
    auto t2 = Steady::now();
    (void)session->HandleToolCall(write, ship);
    (void)session->EndTurn();
    auto t3 = Steady::now();
    json call = {{"id", id}, {"tool", "ship"}, {"arguments", write.arguments}};
    json p = Post(*client, "/v1/propose", {{"conversation", conv}, {"call", call}});
    if (!p["execute"].get<bool>()) {
      std::fprintf(stderr, "bench_serve: the write was not leased: %s\n", p.dump().c_str());
      return 1;
    }
    Post(*client, "/v1/outcome",
         {{"conversation", conv},
          {"call", call},
          {"output", {{"shipped", true}}},
          {"command_key", p["command"]["command_key"]},
          {"fencing_token", p["command"]["fencing_token"]}});
    auto t4 = Steady::now();
    read_in.push_back(Us(t0, t1));
    read_added.push_back(Us(t1, t2) - Us(t0, t1));
    write_in.push_back(Us(t2, t3));
    write_added.push_back(Us(t3, t4) - Us(t2, t3));
  }

  double mem_rate = Throughput({served.listener->port()}, clients, seconds, "tp-mem");
  double redis1 = 0, redis2 = 0;
  if (!redis_ports.empty()) {
    redis1 = Throughput({redis_ports[0]}, clients, seconds, "tp-r1-" + std::to_string(::getpid()));
    redis2 = Throughput(redis_ports, clients, seconds, "tp-r2-" + std::to_string(::getpid()));
  }
  for (pid_t c : children) {
    ::kill(c, SIGKILL);
    ::waitpid(c, nullptr, 0);
  }
  std::printf("read: in process p50 %.1f us; serve adds p50 %.1f us, p99 %.1f us\n",
              Percentile(read_in, 0.5), Percentile(read_added, 0.5), Percentile(read_added, 0.99));
  std::printf("write: in process p50 %.1f us; serve adds p50 %.1f us, p99 %.1f us\n",
              Percentile(write_in, 0.5), Percentile(write_added, 0.5),
              Percentile(write_added, 0.99));
  std::printf(
      "{\"in_process_p50_us\":%.1f,\"serve_added_p50_us\":%.1f,\"serve_added_p99_us\":%.1f,"
      "\"write_in_process_p50_us\":%.1f,\"write_serve_added_p50_us\":%.1f,"
      "\"write_serve_added_p99_us\":%.1f,\"decisions_per_s_memory\":%.0f,"
      "\"decisions_per_s_redis_1proc\":%.0f,\"decisions_per_s_redis_2proc\":%.0f,"
      "\"samples\":%d,\"clients\":%d}\n",
      Percentile(read_in, 0.5), Percentile(read_added, 0.5), Percentile(read_added, 0.99),
      Percentile(write_in, 0.5), Percentile(write_added, 0.5), Percentile(write_added, 0.99),
      mem_rate, redis1, redis2, samples, clients);
  return 0;
}
