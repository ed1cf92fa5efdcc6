// bench_store's durable phase (#19): a turn commit against a bare SET of the
// same stored bytes on the same server with `appendfsync always` (every write
// waits for its fsync), measured interleaved like the headline phase. The
// server's appendfsync is switched for the phase and restored after it, so
// bench_store runs it only on a server scripts/bench started (--durable).
// server_us_per_call ("fcall", "set") says how much of the gap is inside
// Redis (the function's extra commands and bytes) and how much is the client.
// Single-threaded; included by bench_store.cc only.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "internal/redis_records.h"
#include "taskledger/ledger/store.h"
#include "taskledger/redis/client.h"

namespace taskledger::bench {

struct DurableFigures {
  double commit_p50_us = 0, set_p50_us = 0;
  std::string server_us_per_call;  // {"fcall":..,"set":..} from INFO commandstats
};

// Runs `samples` interleaved pairs (after 100 warm-up pairs): SET of the
// turn's stored bytes, then `commit(i)`. REQUIRES: the server is ours to
// reconfigure. Restores appendfsync (and appendonly) before it returns.
inline Result<DurableFigures> MeasureDurable(
    internal::RedisClient& client, const std::string& set_key, const std::string& bytes,
    int samples, const std::function<Status(int)>& commit,
    const std::function<double(const std::vector<double>&, double)>& percentile) {
  auto get = [&](const char* name) -> std::string {
    auto r = client.Command({"CONFIG", "GET", name});
    return r && r->elements().size() == 2 ? r->elements()[1].str() : std::string();
  };
  const std::string appendonly = get("appendonly"), appendfsync = get("appendfsync");
  auto set_config = [&](const std::string& name, const std::string& value) -> Status {
    auto r = client.Command({"CONFIG", "SET", name, value});
    if (!r) return r.error();
    if (r->is_error()) return Status::Internal("CONFIG SET " + name + ": " + r->str());
    return Status::Ok();
  };
  if (Status s = set_config("appendonly", "yes"); !s.ok()) return s;
  if (Status s = set_config("appendfsync", "always"); !s.ok()) return s;
  std::vector<double> sets, commits;
  Status failed = Status::Ok();
  std::string stats;
  for (int i = -100; i < samples && failed.ok(); ++i) {
    if (i == 0) (void)client.Command({"CONFIG", "RESETSTAT"});
    auto start = std::chrono::steady_clock::now();
    auto set = client.Command({"SET", set_key, bytes});
    const double set_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (!set) failed = set.error();
    start = std::chrono::steady_clock::now();
    if (failed.ok()) failed = commit(i + 100);
    const double commit_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (i >= 0) {
      sets.push_back(set_us);
      commits.push_back(commit_us);
    }
  }
  if (auto info = client.Command({"INFO", "commandstats"}); info && info->is_string()) {
    for (const char* cmd : {"fcall", "set"}) {
      const std::string prefix = std::string("cmdstat_") + cmd + ":";
      size_t at = info->str().find(prefix);
      if (at == std::string::npos) continue;
      size_t f = info->str().find("usec_per_call=", at);
      if (f == std::string::npos) continue;
      f += 14;
      stats += std::string(stats.empty() ? "" : ",") + "\"" + cmd +
               "\":" + info->str().substr(f, info->str().find_first_of(",\r", f) - f);
    }
  }
  (void)client.Command({"DEL", set_key});
  // Restore even after a failure: the server goes back to what it was.
  Status restored = set_config("appendfsync", appendfsync.empty() ? "everysec" : appendfsync);
  if (appendonly == "no") (void)set_config("appendonly", "no");
  if (!failed.ok()) return failed;
  if (!restored.ok()) return restored;
  return DurableFigures{percentile(commits, 0.5), percentile(sets, 0.5), "{" + stats + "}"};
}

}  // namespace taskledger::bench
