// bench_reopen: what a reopened Session pays to get its provenance index back
// (issue #23, docs/design.md "Provenance across sessions"), in one run,
// interleaved.
//
// A conversation of 25 turns, each a user message and two get_webpage outputs
// of 4 KB of text (50 outputs), is written once through a Session (so its
// turns carry their sources) and once more with the sources left out (the
// same turns as a 0.1 writer stored them). Then, alternately:
// - reopen: Session::Open on the first, which reads the turns and queues
//   their 51 sources in the index (the walk waits for the first question);
// - reopen_no_sources: Session::Open on the second: the turns are read and
//   decoded but hold nothing to index;
// - reopen_carried: Session::Open given the index the previous session handed
//   on (TakeProvenance), as `taskledger serve` does between requests: no
//   turn is read, which is what every Open cost before sources were
//   persisted (the floor of reopen_ratio);
// and, after each reopen, the first provenance question (the walk of the 50
// outputs that a rule asking provenance pays once per session).
// Also the bytes the sources add to a stored turn record (CBOR, as the Redis
// store writes it: here one message and two pages of page_bytes each).
//
// Usage: bench_reopen [--url redis://HOST:PORT] [--rounds N]
// Without --url the memory store; with it a real Redis (its round trips
// included). The last line of output is one JSON object:
// {"store":..,"outputs":50,"turn_bytes_p50":..,"turn_bytes_without_sources_p50":..,
//  "turn_bytes_added_p50":..,"page_bytes":..,"reopen_p50_us":..,"reopen_no_sources_p50_us":..,
//  "reopen_carried_p50_us":..,"reopen_ratio":..,"first_question_p50_us":..}
// reopen_ratio = reopen / reopen_carried. Every Open shares one checker and
// compiled extraction rules (SessionOptions::checker), as serve's do, so the
// pack's Lua start-up is not in the figures.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "taskledger/ledger/codec.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/ledger/redis_store.h"
#include "taskledger/session/session.h"

using namespace taskledger;
using nlohmann::json;
using Steady = std::chrono::steady_clock;

namespace {

constexpr int kTurns = 25;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Us(Steady::time_point a, Steady::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// 4 KB of page text with links, addresses and numbers in it.
std::string Page(int n) {
  std::string text;
  for (int i = 0; text.size() < 4096; ++i) {
    text += "Paragraph " + std::to_string(i) + " of page " + std::to_string(n) +
            ": see https://site" + std::to_string(i % 7) + ".example/p" + std::to_string(n) +
            " or write to desk" + std::to_string(i) + "@example.org about order #" +
            std::to_string(1000 + i) + ". ";
  }
  return text;
}

std::shared_ptr<const RulePack> Pack() {
  auto pack = RulePack::FromFiles({{"pack.json", R"({
    "name": "reopen-bench", "tools": {"read_only": [], "writes": [], "egress": ["get_webpage"]},
    "trust": {"tools": {"get_webpage": false}}})"},
                                   {"rules.lua", ""}});
  if (!pack) {
    std::fprintf(stderr, "pack: %s\n", pack.error().ToString().c_str());
    std::exit(1);
  }
  return *pack;
}

void Check(const Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::string url = "memory";
  int rounds = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--url") url = argv[i + 1];
    if (a == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
  }
  auto opened = OpenStore(url);
  if (!opened) {
    std::fprintf(stderr, "store: %s\n", opened.error().ToString().c_str());
    return 1;
  }
  Store& store = **opened;
  auto pack = Pack();
  const std::string tenant = "bench-reopen-" + std::to_string(::getpid());
  const ConversationId with{tenant, "with"}, without{tenant, "without"};

  {
    auto s = Session::Open(store, with, pack);
    Check(s ? Status::Ok() : s.error(), "open");
    for (int t = 0; t < kTurns; ++t) {
      Check((*s)->RecordUserMessage("Turn " + std::to_string(t) +
                                    ": please summarise https://site1.example/p" +
                                    std::to_string(2 * t) + " for me"),
            "message");
      for (int k = 0; k < 2; ++k) {
        const int n = 2 * t + k;
        Check((*s)->RecordToolOutput({"w" + std::to_string(n), "get_webpage", {{"url", "x"}}},
                                     ToolOutput{Page(n), false}),
              "output");
      }
      auto v = (*s)->EndTurn();
      Check(v ? Status::Ok() : v.error(), "commit");
    }
  }
  // The same turns without their sources, as a writer before them stored them.
  auto turns = store.ReadTurns(with, 1, kTurns);
  Check(turns ? Status::Ok() : turns.error(), "read turns");
  std::vector<double> bytes_with, bytes_without;
  LedgerState head;
  for (TurnRecord t : *turns) {
    bytes_with.push_back(static_cast<double>(json::to_cbor(EncodeTurn(t)).size()));
    t.sources.clear();
    bytes_without.push_back(static_cast<double>(json::to_cbor(EncodeTurn(t)).size()));
    Check(ApplyTurn(head, t), "apply");
    Check(store.CommitTurn(without, t, head), "commit without");
  }

  auto checker = PolicyChecker::Create(pack);
  auto rules = CompileExtractionRules(*pack);
  Check(checker ? Status::Ok() : checker.error(), "checker");
  Check(rules ? Status::Ok() : rules.error(), "extraction rules");
  SessionOptions shared;
  shared.checker = checker->get();
  shared.extraction_rules = *rules;
  std::shared_ptr<ProvenanceCarry> carry;
  {
    auto s = Session::Open(store, with, pack, shared);
    Check(s ? Status::Ok() : s.error(), "open");
    carry = (*s)->TakeProvenance();
  }
  std::vector<double> reopen, floor, carried, question;
  for (int r = 0; r < rounds; ++r) {
    auto a = Steady::now();
    auto s1 = Session::Open(store, with, pack, shared);
    auto b = Steady::now();
    auto found = (*s1)->provenance().SourcesOf("https://site3.example/p7");
    auto c = Steady::now();
    if (!found || found->empty()) {
      std::fprintf(stderr, "the reopened index lost its sources\n");
      return 1;
    }
    auto s2 = Session::Open(store, without, pack, shared);
    auto d = Steady::now();
    SessionOptions options = shared;
    options.provenance = carry;
    auto s3 = Session::Open(store, with, pack, options);
    auto e = Steady::now();
    if (carry->index != nullptr) {
      std::fprintf(stderr, "the carried index was not taken\n");
      return 1;
    }
    carry = (*s3)->TakeProvenance();
    reopen.push_back(Us(a, b));
    question.push_back(Us(b, c));
    floor.push_back(Us(c, d));
    carried.push_back(Us(d, e));
  }
  (void)store.DropConversation(with);
  (void)store.DropConversation(without);

  const double outputs = 2.0 * kTurns;
  std::vector<double> added;
  for (size_t i = 0; i < bytes_with.size(); ++i) added.push_back(bytes_with[i] - bytes_without[i]);
  json out = {{"store", url == "memory" ? "memory" : "redis"},
              {"rounds", rounds},
              {"outputs", static_cast<int>(outputs)},
              {"turn_bytes_p50", Median(bytes_with)},
              {"turn_bytes_without_sources_p50", Median(bytes_without)},
              {"turn_bytes_added_p50", Median(added)},
              {"page_bytes", Page(0).size()},
              {"reopen_p50_us", Median(reopen)},
              {"reopen_no_sources_p50_us", Median(floor)},
              {"reopen_carried_p50_us", Median(carried)},
              {"reopen_ratio", std::round(Median(reopen) / Median(carried) * 100) / 100},
              {"first_question_p50_us", Median(question)}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
