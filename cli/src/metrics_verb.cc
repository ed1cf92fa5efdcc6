// `taskledger metrics`: Prometheus text exposition (format 0.0.4) for one
// tenant: policy decisions by rule and outcome, tool calls by tool and
// outcome, a histogram of check latency (all read from the committed turns of
// the ledger store), and commands by state and tool from the command store
// (Redis only: a memory command store of another process is not visible).
// Exit 0 ok, 2 store error.
#include <array>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>

#include "cli_common.h"
#include "taskledger/commands/command_metrics.h"
#include "taskledger/commands/redis_command_store.h"
#include "taskledger/ledger/redis_store.h"
#include "verbs.h"

namespace taskledger::cli {
namespace {

// Upper bounds of the check-latency histogram, in seconds.
constexpr std::array<double, 10> kLatencyBuckets = {0.00005, 0.0001, 0.00025, 0.0005, 0.001,
                                                    0.0025,  0.005,  0.01,    0.05,   0.25};

std::string Label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

struct LedgerMetrics {
  std::map<std::tuple<std::string, std::string>, uint64_t> decisions;  // (rule, outcome)
  std::map<std::tuple<std::string, std::string>, uint64_t> calls;      // (tool, outcome)
  std::array<uint64_t, kLatencyBuckets.size()> buckets{};
  uint64_t checks = 0;
  double latency_sum_s = 0;
  uint64_t conversations = 0, turns = 0;
};

Status Collect(Store& store, const std::string& tenant, LedgerMetrics& m) {
  auto names = store.ListConversations(tenant);
  if (!names) return names.error();
  for (const std::string& name : *names) {
    const ConversationId id{tenant, name};
    auto head = store.Head(id);
    if (!head) return head.error();
    if (*head == 0) continue;
    auto turns = store.ReadTurns(id, 1, *head);
    if (!turns) return turns.error();
    ++m.conversations;
    m.turns += turns->size();
    for (const TurnRecord& t : *turns) {
      for (const CallRecord& c : t.calls) ++m.calls[{c.call.tool, c.outcome}];
      for (const DecisionRecord& d : t.decisions) {
        ++m.decisions[{d.rule, d.decision}];
        const double s = static_cast<double>(d.latency_us) / 1e6;
        ++m.checks;
        m.latency_sum_s += s;
        for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
          if (s <= kLatencyBuckets[i]) ++m.buckets[i];
        }
      }
    }
  }
  return Status::Ok();
}

std::string Format(const LedgerMetrics& m, const std::string& tenant) {
  std::ostringstream out;
  const std::string t = "tenant=\"" + Label(tenant) + "\"";
  out << "# HELP taskledger_conversations Conversations with at least one committed turn.\n"
      << "# TYPE taskledger_conversations gauge\n"
      << "taskledger_conversations{" << t << "} " << m.conversations << "\n"
      << "# HELP taskledger_turns_total Committed turns.\n# TYPE taskledger_turns_total counter\n"
      << "taskledger_turns_total{" << t << "} " << m.turns << "\n"
      << "# HELP taskledger_decisions_total Policy decisions by deciding rule and outcome.\n"
      << "# TYPE taskledger_decisions_total counter\n";
  for (const auto& [k, n] : m.decisions) {
    out << "taskledger_decisions_total{" << t << ",rule=\"" << Label(std::get<0>(k))
        << "\",outcome=\"" << Label(std::get<1>(k)) << "\"} " << n << "\n";
  }
  out << "# HELP taskledger_calls_total Tool calls by tool and outcome (ok, error, denied).\n"
      << "# TYPE taskledger_calls_total counter\n";
  for (const auto& [k, n] : m.calls) {
    out << "taskledger_calls_total{" << t << ",tool=\"" << Label(std::get<0>(k)) << "\",outcome=\""
        << Label(std::get<1>(k)) << "\"} " << n << "\n";
  }
  out << "# HELP taskledger_check_latency_seconds Wall time of policy checks.\n"
      << "# TYPE taskledger_check_latency_seconds histogram\n";
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    out << "taskledger_check_latency_seconds_bucket{" << t << ",le=\"" << kLatencyBuckets[i]
        << "\"} " << m.buckets[i] << "\n";
  }
  out << "taskledger_check_latency_seconds_bucket{" << t << ",le=\"+Inf\"} " << m.checks << "\n"
      << "taskledger_check_latency_seconds_sum{" << t << "} " << m.latency_sum_s << "\n"
      << "taskledger_check_latency_seconds_count{" << t << "} " << m.checks << "\n";
  return out.str();
}

int RunMetrics(const CommonOptions& o) {
  NoteIfEphemeralStore(o);
  auto store = OpenStoreOrReport(o);
  if (!store) return kExitUsage;
  LedgerMetrics m;
  Status s = Collect(*store, o.tenant, m);
  if (!s.ok()) return ReportError("cannot read the ledger store", s);
  std::string text = Format(m, o.tenant);
  if (o.store != "memory" && !o.store.empty()) {
    RedisOptions ro;
    ro.url = o.store;
    auto commands = OpenRedisCommandStore(ro);
    if (!commands) return ReportError("cannot open the command store", commands.error());
    auto cm = CollectCommandMetrics(**commands, o.tenant, SystemClock().NowMs());
    if (!cm) return ReportError("cannot read the command store", cm.error());
    text += FormatPrometheus(*cm, o.tenant);
  }
  if (o.json) {
    PrintJson({{"format", "prometheus-0.0.4"}, {"text", text}});
  } else {
    std::cout << text;
  }
  return kExitOk;
}

}  // namespace

void AddMetricsVerb(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CommonOptions>();
  CLI::App* verb = app.add_subcommand(
      "metrics", "Prometheus text metrics: decisions, calls, check latency, commands");
  AddCommonOptions(*verb, *o);
  verb->callback([o, &exit_code] { exit_code = RunMetrics(*o); });
}

}  // namespace taskledger::cli
