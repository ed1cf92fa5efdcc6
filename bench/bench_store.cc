// bench_store: what a turn commit costs on Redis, against the floor of one
// bare PING round trip on the same kind of connection, measured interleaved
// in one run so both see the same machine load; plus the throughput of
// pipelined batches (CommitTurns) over many conversations.
//
// Usage: bench_store --url redis://127.0.0.1:PORT [--samples N]
//                    [--batch N] [--seconds S]
// The last line of output is one JSON object:
// {"ping_p50_us":..,"ping_p99_us":..,"commit_p50_us":..,"commit_p99_us":..,
//  "pipelined_turns_per_s":..,"turn_bytes":..}
// Single-threaded.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "internal/redis_client.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/ledger/redis_store.h"

using namespace taskledger;
using Steady = std::chrono::steady_clock;

namespace {

// A typical turn: ~10 updates, ~1 KB encoded, over a bounded set of keys so
// the periodic snapshot stays the size of a real conversation's state.
TurnRecord MakeTurn(uint64_t turn, int64_t now_ms) {
  TurnRecord t;
  t.turn = turn;
  t.committed_at_ms = now_ms;
  for (int i = 0; i < 10; ++i) {
    Update u;
    u.category = static_cast<Category>(i % kCategoryCount);
    u.key = "order." + std::to_string((turn * 10 + i) % 40);
    u.value = {{"status", "pending"}, {"cents", 1299 + i}};
    u.provenance = {turn, SourceKind::kToolOutput, "get_order#c" + std::to_string(i), true, "", ""};
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

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "bench_store: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url;
  int samples = 20000, batch = 1000;
  double seconds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--url") url = argv[i + 1];
    else if (flag == "--samples") samples = std::atoi(argv[i + 1]);
    else if (flag == "--batch") batch = std::atoi(argv[i + 1]);
    else if (flag == "--seconds") seconds = std::atof(argv[i + 1]);
  }
  if (url.empty() || samples <= 0 || batch <= 0) {
    std::fprintf(stderr, "usage: bench_store --url redis://HOST:PORT [--samples N] [--batch N] [--seconds S]\n");
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
  std::vector<double> ping_us, commit_us;
  size_t turn_bytes = 0;
  // Warm-up, then PING and commit alternate so both see the same load.
  for (int i = -200; i < samples; ++i) {
    auto start = Steady::now();
    auto pong = ping_client.Command({"PING"});
    double ping = MicrosSince(start);
    if (!pong) return Fail("ping", pong.error());

    TurnRecord turn = MakeTurn(head.version + 1, 1'700'000'000'000 + i);
    LedgerState after = head;
    if (Status s = ApplyTurn(after, turn); !s.ok()) return Fail("apply", s);
    start = Steady::now();
    Status s = store.CommitTurn(id, turn, after);
    double commit = MicrosSince(start);
    if (!s.ok()) return Fail("commit", s);
    head = std::move(after);
    if (i >= 0) {
      ping_us.push_back(ping);
      commit_us.push_back(commit);
    } else if (turn_bytes == 0) {
      turn_bytes = EncodeTurn(turn).dump().size();
    }
  }

  // Pipelined: `batch` conversations per CommitTurns call, for `seconds`.
  std::vector<ConversationId> ids;
  std::vector<LedgerState> heads(static_cast<size_t>(batch));
  for (int c = 0; c < batch; ++c) ids.push_back({"bench", "pipe-" + run + "-" + std::to_string(c)});
  // Only CommitTurns is timed: building and applying the turns is the
  // caller's work, not the store's.
  uint64_t committed = 0;
  double store_seconds = 0;
  auto start = Steady::now();
  while (std::chrono::duration<double>(Steady::now() - start).count() < seconds) {
    std::vector<TurnRecord> turns(static_cast<size_t>(batch));
    std::vector<LedgerState> afters(static_cast<size_t>(batch));
    std::vector<CommitRequest> requests;
    for (size_t c = 0; c < turns.size(); ++c) {
      turns[c] = MakeTurn(heads[c].version + 1, 1'700'000'000'000);
      afters[c] = heads[c];
      if (Status s = ApplyTurn(afters[c], turns[c]); !s.ok()) return Fail("apply", s);
      requests.push_back({ids[c], &turns[c], &afters[c]});
    }
    auto batch_start = Steady::now();
    auto statuses = store.CommitTurns(requests);
    store_seconds += MicrosSince(batch_start) / 1e6;
    for (size_t c = 0; c < statuses.size(); ++c) {
      if (!statuses[c].ok()) return Fail("pipelined commit", statuses[c]);
      heads[c] = std::move(afters[c]);
    }
    committed += statuses.size();
  }

  (void)store.DropConversation(id);
  for (const auto& c : ids) (void)store.DropConversation(c);

  double ping_p50 = Percentile(ping_us, 0.50), commit_p50 = Percentile(commit_us, 0.50);
  std::printf("samples=%d turn_bytes=%zu batch=%d\n", samples, turn_bytes, batch);
  std::printf("commit_p50 / ping_p50 = %.2f\n", commit_p50 / ping_p50);
  std::printf(
      "{\"ping_p50_us\":%.1f,\"ping_p99_us\":%.1f,\"commit_p50_us\":%.1f,\"commit_p99_us\":%.1f,"
      "\"pipelined_turns_per_s\":%.0f,\"turn_bytes\":%zu}\n",
      ping_p50, Percentile(ping_us, 0.99), commit_p50, Percentile(commit_us, 0.99),
      static_cast<double>(committed) / store_seconds, turn_bytes);
  return 0;
}
