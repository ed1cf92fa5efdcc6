// bench_store: what a turn commit costs on Redis, against the floor of one
// bare PING round trip on the same kind of connection, measured interleaved
// in one run so both see the same machine load; plus the throughput of
// pipelined batches (CommitTurns) over many conversations.
//
// Usage: bench_store --url redis://127.0.0.1:PORT [--samples N]
//                    [--batch N] [--seconds S] [--cluster-url redis+cluster://...]
//                    [--replicas N]  (the cluster store waits for N replicas)
// The last line of output is one JSON object:
// {"ping_p50_us":..,"ping_p99_us":..,"commit_p50_us":..,"commit_p99_us":..,
//  "commit_to_ping_p50":..,"commit_minus_ping_p50_us":..,"placement":..,
//  "same_core":{"ping_p50_us":..,"commit_p50_us":..,"commit_to_ping_p50":..},
//  "pipelined_turns_per_s":..,"turn_bytes":..,"turn_json_bytes":..,
//  "snapshot_every":..,"redis":{"version":..,"appendonly":..,"appendfsync":..},
//  "server_us_per_call":{...}}
// turn_bytes is the stored (CBOR) record sent per commit. "redis" is read
// from the server itself (CONFIG GET), so the JSON says which persistence
// the numbers were taken with. server_us_per_call is INFO commandstats over
// the headline latency phase: what each command cost inside Redis, without
// the round trip. "placement" is "separate cores" when the server is local
// and pinned to some CPUs (scripts/bench does that): the headline numbers
// and the pipelined phase then run on the other CPUs, and "same_core"
// repeats the latency phase on the server's own core (else it is null and
// "placement" is "os").
// With --cluster-url (scripts/bench store --cluster starts a 3-primary
// cluster), the same latency and pipelined phases then run on the cluster
// (PING to the primary of the latency conversation's slot), and the JSON
// gains "nodes", "cluster":{ping/commit p50, p99, pipelined_turns_per_s}
// and the ratios against the single server of the same run:
// "cluster_to_single_commit_p50" (goal <= 1.2) and
// "cluster_to_single_pipelined" (goal >= 0.8). With --durable N
// (scripts/bench store passes it for the server it starts), N commits against
// N bare SETs of the same bytes with appendfsync always (durable_phase.h):
// "durable":{...} and "durable_commit_to_set_p50" (goal <= 1.2). With
// --tls-url (scripts/bench store --tls), the latency phase again over TLS:
// "tls":{...} and "tls_to_plain_commit_p50".
// Single-threaded.
#include <sched.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "durable_phase.h"
#include "internal/redis_records.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/ledger/redis_store.h"
#include "taskledger/redis/client.h"
#include "taskledger/redis/keys.h"
#include "taskledger/redis/slots.h"

using namespace taskledger;
using Steady = std::chrono::steady_clock;

namespace {

// A typical turn: 10 updates, ~1 KB stored, over a bounded set of keys so
// the periodic snapshot stays the size of a real conversation's state.
TurnRecord MakeTurn(uint64_t turn, int64_t now_ms) {
  TurnRecord t;
  t.turn = turn;
  t.committed_at_ms = now_ms;
  for (int i = 0; i < 10; ++i) {
    Update u;
    u.category = static_cast<Category>(i % kCategoryCount);
    u.key = "order." + std::to_string((turn * 10 + i) % 40);
    u.value = {{"cents", 1299 + i}};
    u.provenance = {turn, SourceKind::kToolOutput, "lookup#c" + std::to_string(i), true, "", ""};
    t.updates.push_back(std::move(u));
  }
  return t;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t idx = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[idx];
}

double MicrosSince(Steady::time_point start) {
  return std::chrono::duration<double, std::micro>(Steady::now() - start).count();
}

// The value of `field` in a "k=v,k=v" line of INFO output, or "".
std::string InfoField(const std::string& info, const std::string& line_prefix,
                      const std::string& field) {
  size_t at = info.find(line_prefix);
  if (at == std::string::npos) return "";
  size_t end = info.find('\n', at);
  std::string line = info.substr(at, end == std::string::npos ? std::string::npos : end - at);
  size_t f = line.find(field + "=");
  if (f == std::string::npos) return "";
  f += field.size() + 1;
  return line.substr(f, line.find_first_of(",\r", f) - f);
}

std::string ConfigValue(internal::RedisClient& client, const std::string& name) {
  auto r = client.Command({"CONFIG", "GET", name});
  if (!r || r->elements().size() != 2) return "unknown";
  return r->elements()[1].str();
}

// redis-server's user + system CPU seconds so far.
double ServerCpuSeconds(internal::RedisClient& client) {
  auto info = client.Command({"INFO", "cpu"});
  if (!info || !info->is_string()) return 0;
  auto field = [&](const std::string& name) {
    size_t at = info->str().find(name + ":");
    return at == std::string::npos ? 0.0 : std::atof(info->str().c_str() + at + name.size() + 1);
  };
  return field("used_cpu_user") + field("used_cpu_sys");
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Where redis-server and this process run. When the server is local and
// pinned to some of this machine's CPUs (scripts/bench pins it to the last
// one), the client takes the others: a PING between two processes that share
// one core measures a context switch, not a round trip, and a deployment
// does not put its Redis on the clients' cores.
struct Placement {
  bool pinned = false;
  cpu_set_t server_cpus{}, client_cpus{};
};

Placement PlacementOf(internal::RedisClient& client) {
  Placement p;
  auto info = client.Command({"INFO", "server"});
  if (!info || !info->is_string()) return p;
  size_t at = info->str().find("process_id:");
  if (at == std::string::npos) return p;
  pid_t pid = static_cast<pid_t>(std::atol(info->str().c_str() + at + 11));
  cpu_set_t all;
  if (sched_getaffinity(0, sizeof all, &all) != 0 ||
      sched_getaffinity(pid, sizeof p.server_cpus, &p.server_cpus) != 0) {
    return p;  // not a local server, or not ours to inspect
  }
  CPU_ZERO(&p.client_cpus);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &all) && !CPU_ISSET(cpu, &p.server_cpus)) CPU_SET(cpu, &p.client_cpus);
  }
  p.pinned = CPU_COUNT(&p.client_cpus) > 0 && CPU_COUNT(&p.server_cpus) < CPU_COUNT(&all);
  return p;
}

void Pin(const cpu_set_t& cpus) { (void)sched_setaffinity(0, sizeof cpus, &cpus); }

struct Latency {
  std::vector<double> ping_us, commit_us;
  double ping_p50() const { return Percentile(ping_us, 0.50); }
  double ping_p99() const { return Percentile(ping_us, 0.99); }
  double commit_p50() const { return Percentile(commit_us, 0.50); }
  double commit_p99() const { return Percentile(commit_us, 0.99); }
};

// Warm-up, then PING and a commit alternate, so both see the same load.
Status MeasureLatency(internal::RedisClient& ping_client, Store& store, const ConversationId& id,
                      LedgerState& head, int samples, Latency& out) {
  for (int i = -200; i < samples; ++i) {
    auto start = Steady::now();
    auto pong = ping_client.Command({"PING"});
    double ping = MicrosSince(start);
    if (!pong) return pong.error();
    TurnRecord turn = MakeTurn(head.version + 1, 1'700'000'000'000 + i);
    LedgerState after = head;
    if (Status s = ApplyTurn(after, turn); !s.ok()) return s;
    start = Steady::now();
    Status s = store.CommitTurn(id, turn, after);
    double commit = MicrosSince(start);
    if (!s.ok()) return s;
    head = std::move(after);
    if (i >= 0) {
      out.ping_us.push_back(ping);
      out.commit_us.push_back(commit);
    }
  }
  return Status::Ok();
}

struct Pipelined {
  uint64_t committed = 0;
  double store_seconds = 0, client_cpu_seconds = 0;
};

// `batch` conversations per CommitTurns call, for `seconds`; only
// CommitTurns is timed (building and applying the turns is the caller's
// work). Drops the conversations afterwards.
Status MeasurePipelined(Store& store, const std::string& prefix, int batch, double seconds,
                        Pipelined& out) {
  std::vector<ConversationId> ids;
  std::vector<LedgerState> heads(static_cast<size_t>(batch));
  ids.reserve(static_cast<size_t>(batch));
  for (int c = 0; c < batch; ++c) ids.push_back({"bench", prefix + "-" + std::to_string(c)});
  auto start = Steady::now();
  while (std::chrono::duration<double>(Steady::now() - start).count() < seconds) {
    std::vector<TurnRecord> turns(static_cast<size_t>(batch));
    std::vector<LedgerState> afters(static_cast<size_t>(batch));
    std::vector<CommitRequest> requests;
    for (size_t c = 0; c < turns.size(); ++c) {
      turns[c] = MakeTurn(heads[c].version + 1, 1'700'000'000'000);
      afters[c] = heads[c];
      if (Status s = ApplyTurn(afters[c], turns[c]); !s.ok()) return s;
      requests.push_back({ids[c], &turns[c], &afters[c]});
    }
    auto batch_start = Steady::now();
    double cpu_start = ThreadCpuSeconds();
    auto statuses = store.CommitTurns(requests);
    out.client_cpu_seconds += ThreadCpuSeconds() - cpu_start;
    out.store_seconds += MicrosSince(batch_start) / 1e6;
    for (size_t c = 0; c < statuses.size(); ++c) {
      if (!statuses[c].ok()) return statuses[c];
      heads[c] = std::move(afters[c]);
    }
    out.committed += statuses.size();
  }
  for (const auto& c : ids) (void)store.DropConversation(c);
  return Status::Ok();
}

// The cluster phases, as JSON fields to append: latency (PING to the
// primary serving the conversation, interleaved with its commits) and
// pipelined batches spread over every slot.
Result<std::string> ClusterFigures(const std::string& url, uint32_t replicas,
                                   const std::string& run, int samples, int batch, double seconds,
                                   double single_commit_p50, double single_turns_per_s) {
  RedisOptions options;
  options.url = url;
  options.replicas = replicas;
  auto opened = OpenRedisStore(options);
  if (!opened) return opened.error();
  Store& store = *opened.value();
  auto seeds = internal::ParseClusterUrl(url);
  if (!seeds) return seeds.error();
  internal::RedisClient seed(seeds->front(), {});
  auto slots = seed.Command({"CLUSTER", "SLOTS"});
  if (!slots) return slots.error();
  auto map = internal::ParseClusterSlots(*slots, seeds->front().host);
  if (!map) return map.error();
  ConversationId id{"bench", "cluster-latency-" + run};
  uint16_t owner = map->owner[internal::KeySlot(internal::TurnStreamKey(id))];
  if (owner == internal::SlotMap::kNoOwner) return Status::Unavailable("slot not covered");
  internal::RedisEndpoint node = seeds->front();
  node.host = map->primaries[owner].host;
  node.port = map->primaries[owner].port;
  internal::RedisClient ping_client(node, {});
  Latency latency;
  LedgerState head;
  if (Status s = MeasureLatency(ping_client, store, id, head, samples, latency); !s.ok()) return s;
  (void)store.DropConversation(id);
  Pipelined pipe;
  if (Status s = MeasurePipelined(store, "cluster-pipe-" + run, batch, seconds, pipe); !s.ok())
    return s;
  double turns_per_s = static_cast<double>(pipe.committed) / pipe.store_seconds;
  char text[512];
  std::snprintf(
      text, sizeof text,
      ",\"nodes\":%zu,\"cluster\":{\"replicas_waited\":%u,\"ping_p50_us\":%.1f,\"commit_p50_us\":%."
      "1f,"
      "\"commit_p99_us\":%.1f,\"commit_to_ping_p50\":%.2f,\"pipelined_turns_per_s\":%.0f},"
      "\"cluster_to_single_commit_p50\":%.2f,\"cluster_to_single_pipelined\":%.2f",
      map->primaries.size(), replicas, latency.ping_p50(), latency.commit_p50(),
      latency.commit_p99(), latency.commit_p50() / latency.ping_p50(), turns_per_s,
      latency.commit_p50() / single_commit_p50, turns_per_s / single_turns_per_s);
  return std::string(text);
}

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "bench_store: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

// The headline latency phase again over TLS (--tls-url rediss://...?ca=...),
// as JSON fields to append: PING and commit p50 and their ratio to the plain
// TCP commit of the same run.
Result<std::string> TlsFigures(const std::string& url, const std::string& run, int samples,
                               double plain_commit_p50) {
  RedisOptions options;
  options.url = url;
  auto opened = OpenRedisStore(options);
  if (!opened) return opened.error();
  auto endpoint = internal::ParseRedisUrl(url);
  if (!endpoint) return endpoint.error();
  internal::RedisClient ping_client(*endpoint, {});
  ConversationId id{"bench", "tls-latency-" + run};
  Latency latency;
  LedgerState head;
  if (Status s = MeasureLatency(ping_client, **opened, id, head, samples, latency); !s.ok()) {
    return s;
  }
  (void)(*opened)->DropConversation(id);
  char text[256];
  std::snprintf(
      text, sizeof text,
      ",\"tls\":{\"ping_p50_us\":%.1f,\"commit_p50_us\":%.1f,\"commit_to_ping_p50\":%.2f},"
      "\"tls_to_plain_commit_p50\":%.2f",
      latency.ping_p50(), latency.commit_p50(), latency.commit_p50() / latency.ping_p50(),
      latency.commit_p50() / plain_commit_p50);
  return std::string(text);
}

}  // namespace

int main(int argc, char** argv) {
  std::string url, cluster_url, tls_url;
  uint32_t replicas = 0;  // the cluster store's RedisOptions::replicas
  int samples = 20000, batch = 1000, durable = 0;
  double seconds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--url")
      url = argv[i + 1];
    else if (flag == "--samples")
      samples = std::atoi(argv[i + 1]);
    else if (flag == "--batch")
      batch = std::atoi(argv[i + 1]);
    else if (flag == "--seconds")
      seconds = std::atof(argv[i + 1]);
    else if (flag == "--cluster-url")
      cluster_url = argv[i + 1];
    else if (flag == "--replicas")
      replicas = static_cast<uint32_t>(std::atoi(argv[i + 1]));
    else if (flag == "--tls-url")
      tls_url = argv[i + 1];
    else if (flag == "--durable")
      durable = std::atoi(argv[i + 1]);
  }
  if (url.empty() || samples <= 0 || batch <= 0) {
    std::fprintf(
        stderr,
        "usage: bench_store --url redis://HOST:PORT [--samples N] [--batch N] [--seconds S] "
        "[--cluster-url redis+cluster://HOST:PORT,...] [--durable SAMPLES] [--tls-url "
        "rediss://...]\n");
    return 2;
  }
  RedisOptions options;
  options.url = url;
  auto opened = OpenRedisStore(options);
  if (!opened) return Fail("open", opened.error());
  Store& store = *opened.value();
  auto endpoint = internal::ParseRedisUrl(url);
  if (!endpoint) return Fail("url", endpoint.error());
  internal::RedisClient ping_client(*endpoint, {});

  std::string run = std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  ConversationId id{"bench", "latency-" + run};
  LedgerState head;
  std::string redis_version = "unknown";
  if (auto info = ping_client.Command({"INFO", "server"}); info && info->is_string()) {
    const std::string& text = info->str();
    if (size_t at = text.find("redis_version:"); at != std::string::npos) {
      at += 14;
      redis_version = text.substr(at, text.find_first_of("\r\n", at) - at);
    }
  }
  std::string appendonly = ConfigValue(ping_client, "appendonly");
  std::string appendfsync = ConfigValue(ping_client, "appendfsync");
  (void)ping_client.Command({"CONFIG", "RESETSTAT"});
  Placement placement = PlacementOf(ping_client);
  size_t turn_bytes = 0, turn_json_bytes = 0;
  {
    TurnRecord turn = MakeTurn(1, 0);
    turn_bytes = internal::TurnRecordBytes(turn).size();
    turn_json_bytes = EncodeTurn(turn).dump().size();
  }
  // The headline: this thread on a core of its own (the server's other
  // cores, when it is pinned); then, for comparison, on the server's core.
  if (placement.pinned) Pin(placement.client_cpus);
  Latency apart;
  if (Status s = MeasureLatency(ping_client, store, id, head, samples, apart); !s.ok())
    return Fail("latency", s);
  std::string server_stats;
  if (auto info = ping_client.Command({"INFO", "commandstats"}); info && info->is_string()) {
    for (const char* cmd : {"ping", "fcall", "xlen", "xadd", "persist", "pexpire"}) {
      std::string v = InfoField(info->str(), std::string("cmdstat_") + cmd + ":", "usec_per_call");
      if (v.empty()) continue;
      server_stats += std::string(server_stats.empty() ? "" : ",") + "\"" + cmd + "\":" + v;
    }
  }
  std::string same_core = "null";
  if (placement.pinned) {
    Pin(placement.server_cpus);
    Latency shared;
    if (Status s = MeasureLatency(ping_client, store, id, head, samples, shared); !s.ok())
      return Fail("latency", s);
    Pin(placement.client_cpus);
    char text[160];
    std::snprintf(text, sizeof text,
                  "{\"ping_p50_us\":%.1f,\"commit_p50_us\":%.1f,\"commit_to_ping_p50\":%.2f}",
                  shared.ping_p50(), shared.commit_p50(), shared.commit_p50() / shared.ping_p50());
    same_core = text;
  }

  Pipelined pipe;
  double server_cpu_start = ServerCpuSeconds(ping_client);
  if (Status st = MeasurePipelined(store, "pipe-" + run, batch, seconds, pipe); !st.ok())
    return Fail("pipelined commit", st);
  uint64_t committed = pipe.committed;
  double store_seconds = pipe.store_seconds, client_cpu_seconds = pipe.client_cpu_seconds;

  // Where the pipelined time goes: this thread's CPU inside CommitTurns,
  // and redis-server's CPU (INFO cpu: commands, networking, AOF writes).
  double server_us = (ServerCpuSeconds(ping_client) - server_cpu_start) * 1e6;
  (void)store.DropConversation(id);
  std::string durable_json;
  if (durable > 0) {
    ConversationId durable_id{"bench", "durable-" + run};
    LedgerState durable_head;
    auto commit = [&](int i) {
      TurnRecord turn = MakeTurn(durable_head.version + 1, 1'700'000'000'000 + i);
      LedgerState after = durable_head;
      if (Status s = ApplyTurn(after, turn); !s.ok()) return s;
      Status s = store.CommitTurn(durable_id, turn, after);
      if (s.ok()) durable_head = std::move(after);
      return s;
    };
    auto figures = bench::MeasureDurable(ping_client, "bench:durable-set:" + run,
                                         internal::TurnRecordBytes(MakeTurn(1, 0)), durable, commit,
                                         Percentile);
    (void)store.DropConversation(durable_id);
    if (!figures) return Fail("durable", figures.error());
    char text[400];
    std::snprintf(
        text, sizeof text,
        ",\"durable\":{\"appendfsync\":\"always\",\"commit_p50_us\":%.1f,"
        "\"set_p50_us\":%.1f,\"server_us_per_call\":%s},\"durable_commit_to_set_p50\":%.2f",
        figures->commit_p50_us, figures->set_p50_us, figures->server_us_per_call.c_str(),
        figures->commit_p50_us / figures->set_p50_us);
    durable_json = text;
  }
  std::string tls_json;
  if (!tls_url.empty()) {
    auto figures = TlsFigures(tls_url, run, samples, apart.commit_p50());
    if (!figures) return Fail("tls", figures.error());
    tls_json = *figures;
  }
  std::string cluster_json;
  if (!cluster_url.empty()) {
    auto figures =
        ClusterFigures(cluster_url, replicas, run, samples, batch, seconds, apart.commit_p50(),
                       static_cast<double>(committed) / store_seconds);
    if (!figures) return Fail("cluster", figures.error());
    cluster_json = *figures;
  }

  double ping_p50 = apart.ping_p50(), commit_p50 = apart.commit_p50();
  std::printf("samples=%d turn_bytes=%zu batch=%d placement=%s\n", samples, turn_bytes, batch,
              placement.pinned ? "client and server on separate cores" : "left to the OS");
  std::printf("commit_p50 / ping_p50 = %.2f\n", commit_p50 / ping_p50);
  std::printf(
      "{\"ping_p50_us\":%.1f,\"ping_p99_us\":%.1f,\"commit_p50_us\":%.1f,\"commit_p99_us\":%.1f,"
      "\"commit_to_ping_p50\":%.2f,\"commit_minus_ping_p50_us\":%.1f,\"placement\":\"%s\","
      "\"same_core\":%s,\"pipelined_turns_per_s\":%.0f,\"batch\":%d,\"turn_bytes\":%zu,"
      "\"turn_json_bytes\":%zu,\"snapshot_every\":%u,"
      "\"pipelined_us_per_turn\":{\"wall\":%.2f,\"client_cpu\":%.2f,\"server_cpu\":%.2f},"
      "\"redis\":{\"version\":\"%s\",\"appendonly\":\"%s\",\"appendfsync\":\"%s\"},"
      "\"server_us_per_call\":{%s}%s%s%s}\n",
      ping_p50, apart.ping_p99(), commit_p50, apart.commit_p99(), commit_p50 / ping_p50,
      commit_p50 - ping_p50, placement.pinned ? "separate cores" : "os", same_core.c_str(),
      static_cast<double>(committed) / store_seconds, batch, turn_bytes, turn_json_bytes,
      options.store.snapshot_every, store_seconds * 1e6 / static_cast<double>(committed),
      client_cpu_seconds * 1e6 / static_cast<double>(committed),
      server_us / static_cast<double>(committed), redis_version.c_str(), appendonly.c_str(),
      appendfsync.c_str(), server_stats.c_str(), durable_json.c_str(), tls_json.c_str(),
      cluster_json.c_str());
  return 0;
}
