// bench_records: reading the Redis store's records back, by the direct
// readers (ReadStateRecord / ReadTurnRecord, ledger/src/redis_records_read.cc)
// against the codec they stand in for (nlohmann::json::from_cbor, then
// DecodeState / DecodeTurn), interleaved in one run. What reopening a long
// conversation costs is mostly this: its newest snapshot decoded, then the
// turns after it.
//
// The records are those of issue #16's long conversation (bench/
// long_conversation.h: N get_order_details calls of the retail trace, ~16
// entries each), replayed on the memory store: the head state as a snapshot
// record, and every turn as a turn record, encoded as the Redis store writes
// them. Each round decodes the snapshot and all the turns both ways; every
// direct read is checked against the codec's (same bytes written back).
//
// Usage: bench_records [--calls N] [--rounds R]
// The last stdout line is JSON: {"calls":N,"entries":..,"state_bytes":..,
// "state_codec_ms_p50":..,"state_direct_ms_p50":..,"state_speedup":..,
// "turns":..,"turn_bytes_p50":..,"turn_codec_us_p50":..,"turn_direct_us_p50":..,
// "turn_speedup":..,"us_per_entry_direct":..} (speedup = codec / direct; the
// per-turn figures are one turn's mean within a round, then the median round).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "internal/redis_records.h"
#include "long_conversation.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/session/replay.h"
#include "taskledger/session/session.h"

using namespace taskledger;
using SteadyClock = std::chrono::steady_clock;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "bench_records: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 4000;
  int rounds = 7;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--calls" && i + 1 < argc) {
      calls = std::atoi(argv[++i]);
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: bench_records [--calls N] [--rounds R]\n");
      return 2;
    }
  }
  const std::filesystem::path root(TASKLEDGER_SOURCE_DIR);
  auto pack = RulePack::Load((root / "rules" / "retail").string());
  if (!pack.has_value()) return Fail(pack.error().ToString());
  auto trace = bench::GenerateLongConversation(
      (root / "tests" / "data" / "tau-bench-retail" / "retail_gold.jsonl").string(), calls);
  if (!trace.has_value()) return Fail(trace.error().ToString());
  auto store = NewMemoryStore();
  const ConversationId id{"bench", trace->conversation};
  {
    auto session = Session::Open(*store, id, pack.value());
    if (!session.has_value()) return Fail(session.error().ToString());
    auto replay = ReplayConversation(*session.value(), trace.value());
    if (!replay.has_value()) return Fail(replay.error().ToString());
  }
  auto head = store->ReadHead(id);
  auto turns = store->ReadTurns(id, 1, head.has_value() ? head->version : 0);
  if (!head.has_value() || !turns.has_value()) return Fail("reading the conversation back");

  const std::string state_bytes = internal::StateRecordBytes(head.value());
  std::vector<std::string> turn_bytes;
  std::vector<double> sizes;
  for (const TurnRecord& t : turns.value()) {
    turn_bytes.push_back(internal::TurnRecordBytes(t));
    sizes.push_back(static_cast<double>(turn_bytes.back().size()));
  }
  // Each direct read is the codec's record: the same bytes written back.
  auto direct_state = internal::ReadStateRecord(state_bytes);
  if (!direct_state || internal::StateRecordBytes(*direct_state) != state_bytes) {
    return Fail("the direct reader read the snapshot differently");
  }
  for (const std::string& bytes : turn_bytes) {
    auto t = internal::ReadTurnRecord(bytes);
    if (!t || internal::TurnRecordBytes(*t) != bytes) {
      return Fail("the direct reader read a turn differently");
    }
  }

  std::vector<double> state_codec, state_direct, turn_codec, turn_direct;
  const double n_turns = static_cast<double>(std::max<size_t>(1, turn_bytes.size()));
  for (int r = 0; r < rounds; ++r) {
    auto start = SteadyClock::now();
    auto decoded = DecodeState(nlohmann::json::from_cbor(state_bytes));
    state_codec.push_back(SecondsSince(start) * 1e3);
    if (!decoded.has_value()) return Fail(decoded.error().ToString());

    start = SteadyClock::now();
    auto read = internal::ReadStateRecord(state_bytes);
    state_direct.push_back(SecondsSince(start) * 1e3);
    if (!read) return Fail("the direct reader declined the snapshot");

    start = SteadyClock::now();
    for (const std::string& bytes : turn_bytes) {
      if (!DecodeTurn(nlohmann::json::from_cbor(bytes)).has_value()) return Fail("a turn");
    }
    turn_codec.push_back(SecondsSince(start) * 1e6 / n_turns);

    start = SteadyClock::now();
    for (const std::string& bytes : turn_bytes) {
      if (!internal::ReadTurnRecord(bytes)) return Fail("the direct reader declined a turn");
    }
    turn_direct.push_back(SecondsSince(start) * 1e6 / n_turns);
  }
  const size_t entries = head->size();
  const double codec_ms = Median(state_codec), direct_ms = Median(state_direct);
  const double turn_codec_us = Median(turn_codec), turn_direct_us = Median(turn_direct);
  std::printf(
      "{\"calls\":%d,\"entries\":%zu,\"state_bytes\":%zu,\"state_codec_ms_p50\":%.2f,"
      "\"state_direct_ms_p50\":%.2f,\"state_speedup\":%.2f,\"turns\":%zu,"
      "\"turn_bytes_p50\":%.0f,\"turn_codec_us_p50\":%.2f,\"turn_direct_us_p50\":%.2f,"
      "\"turn_speedup\":%.2f,\"us_per_entry_direct\":%.3f}\n",
      calls, entries, state_bytes.size(), codec_ms, direct_ms, codec_ms / direct_ms,
      turn_bytes.size(), Median(sizes), turn_codec_us, turn_direct_us,
      turn_codec_us / turn_direct_us, direct_ms * 1e3 / static_cast<double>(entries));
  return 0;
}
