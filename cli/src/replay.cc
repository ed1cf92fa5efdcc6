// `taskledger replay TRACE.jsonl --rules DIR`: drives every conversation of a
// trace through a Session (extraction, the policy gate, the ledger), prints
// each gated call's decision, and scores the decisions the trace labels.
// Exit 1 on any mismatch with a label or any policy error (a rule that failed
// and so failed closed; --allow-policy-errors only reports them); 2 on bad
// usage, a store error, or any conversation that could not be read or
// replayed (at once under --strict; after the others without it; never with
// --allow-unreadable). --jobs N replays conversations on N threads
// (replay_jobs.h) with the same output, in input order.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "audit_html.h"
#include "audit_visibility.h"
#include "cli_common.h"
#include "replay_decision.h"
#include "replay_input.h"
#include "replay_jobs.h"
#include "replay_summary.h"
#include "taskledger/base/clock.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/checker.h"
#include "taskledger/session/replay.h"
#include "taskledger/session/replay_tally.h"
#include "taskledger/session/session.h"
#include "verbs.h"

namespace taskledger::cli {
namespace {

struct ReplayOptions {
  CommonOptions common;
  std::vector<std::string> traces;
  std::string rules;
  std::string prefix;
  std::string audit_html;
  bool prefix_given = false;  // --prefix on the command line, even empty
  bool strict = false;
  bool allow_unreadable = false;
  bool allow_policy_errors = false;
  bool quiet = false;
  uint64_t limit = 0;
  int jobs = 0;  // worker threads; 0: the hardware threads
};

// A prefix no earlier run used, so a rerun against a durable store starts
// every conversation at version 0 instead of conflicting with the last run.
std::string RunUniquePrefix() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return "replay-" +
         std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now).count()) + "-" +
         std::to_string(::getpid()) + "/";
}

// "run1" + "retail-7" is "run1/retail-7": a prefix names a folder of
// conversations; one that already ends in '/' is used as it is.
std::string PrefixedId(const std::string& prefix, const std::string& conversation) {
  if (prefix.empty() || prefix.back() == '/') return prefix + conversation;
  return prefix + "/" + conversation;
}

// The hardware threads (1 if unknown).
size_t DefaultJobs() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

std::string Stored(const ConversationId& id) {
  return "conversation " + id.conversation +
         " already has turns in the store; skipped (use another --prefix)";
}

// Parses one trace line (on a worker's thread) and names its stored
// conversation; an unreadable line stops the run under --strict.
ReplayParsed ParseLine(const ReplayOptions& o, const TraceLimits& limits, ReplayWork& work) {
  if (work.text) {
    work.conversation.emplace(ParseTraceLine(*work.text, limits));
    std::string().swap(*work.text);  // the parsed conversation holds what is needed
  } else {
    work.conversation.emplace(work.text.error());
  }
  ReplayParsed parsed;
  if (*work.conversation) {
    work.id =
        ConversationId{o.common.tenant, PrefixedId(o.prefix, (*work.conversation)->conversation)};
    parsed.key = work.id.conversation;
  } else {
    parsed.stop = o.strict;
  }
  return parsed;
}

// Replays one parsed trace line (on a worker's thread): what the serial loop
// printed for it goes into `done` instead, to be printed in input order.
ReplayDone ReplayLine(const ReplayOptions& o, Store& store,
                      const std::shared_ptr<const RulePack>& pack, const SessionOptions& options,
                      ReplayWork& work) {
  ReplayDone done;
  const std::string& where = work.where;
  auto fail = [&](const std::string& why) {
    done.err = where + ": " + why + "\n";
    done.failed = true;
    done.tally.AddFailedConversation();
    done.stop = o.strict;
    return std::move(done);
  };
  Result<TraceConversation>& parsed = *work.conversation;
  if (!parsed) return fail(parsed.error().ToString());
  TraceConversation& trace = *parsed;
  // A conversation already in the store (an earlier run, or a duplicate
  // line) is skipped before a session reads its history.
  if (auto head = store.Head(work.id); head.has_value() && *head != 0) return fail(Stored(work.id));
  auto session = Session::Open(store, work.id, pack, options);
  if (!session) {
    done.err =
        "taskledger: " + where + ": cannot open session: " + session.error().ToString() + "\n";
    done.fatal = true;
    done.stop = true;
    return done;
  }
  if ((*session)->ledger().version() != 0) {
    // Replaying on top of an earlier run (or a duplicate line) would mix
    // two replays' turns in one ledger.
    return fail(Stored(work.id));
  }
  // The trace line is not needed afterwards: its outputs move into the session.
  auto result = ReplayConversation(**session, std::move(trace));
  if (!result) return fail(result.error().ToString());
  std::ostringstream out;
  for (const ReplayedCall& c : result->calls)
    PrintReplayDecision(out, o.quiet, o.common.json, result->conversation, c);
  done.out = std::move(out).str();
  done.tally.Add(*result);
  done.replayed = true;
  done.id = std::move(work.id);
  return done;
}

// The memory store holds every version of every replayed conversation.
// Freeing it entry by entry when the verb returns was about 12% of a replay's
// process time (perf, retail_gold), and gives nothing back: the process exits
// right after. So a memory store is handed to a holder that is never
// destroyed (a run in the same process frees the previous run's store). It
// stays reachable, so leak checkers do not report it. Any other store is
// closed normally: it may hold connections.
class KeepMemoryStoreAtExit {
 public:
  KeepMemoryStoreAtExit(const CommonOptions& options, std::unique_ptr<Store>& store)
      : memory_(options.store.empty() || options.store == "memory"), store_(store) {}
  KeepMemoryStoreAtExit(const KeepMemoryStoreAtExit&) = delete;
  KeepMemoryStoreAtExit& operator=(const KeepMemoryStoreAtExit&) = delete;
  ~KeepMemoryStoreAtExit() {
    if (!memory_ || store_ == nullptr) return;
    kept_.store = std::move(store_);
  }

 private:
  // A union's member is destroyed only by hand: this one never is.
  union Kept {
    Kept() : store() {}
    Kept(const Kept&) = delete;
    Kept& operator=(const Kept&) = delete;
    ~Kept() {}  // NOLINT(modernize-use-equals-default): must not destroy the store
    std::unique_ptr<Store> store;
  };
  static inline Kept kept_;

  bool memory_;
  std::unique_ptr<Store>& store_;
};

int RunReplay(ReplayOptions& o) {
  auto pack = RulePack::Load(o.rules);
  if (!pack) return ReportError("cannot load rule pack " + o.rules, pack.error());
  // The audit page marks what the pack's "render" keeps out of the prompt.
  auto visibility = LoadRenderVisibility(o.audit_html.empty() ? std::string() : o.rules);
  if (!visibility) return ReportError("cannot read the pack's render section", visibility.error());
  const bool memory = o.common.store.empty() || o.common.store == "memory";
  // Without audit output nothing reads a memory store's history after the
  // replay: keeping only heads saves every turn record and version (fresh
  // heap is page faults, about 0.4 ms per MB here).
  std::unique_ptr<Store> store =
      memory && o.audit_html.empty() ? NewHeadsOnlyMemoryStore() : OpenStoreOrReport(o.common);
  if (!store) return kExitUsage;
  const KeepMemoryStoreAtExit keep(o.common, store);
  if (!o.prefix_given && o.common.store != "memory" && !o.common.store.empty()) {
    o.prefix = RunUniquePrefix();
  }
  // One checker per worker and one compiled extract.json for the whole run:
  // each worker opens its sessions one after another on its thread (see
  // SessionOptions); the store and the pack are shared.
  const size_t workers = o.jobs > 0 ? static_cast<size_t>(o.jobs) : DefaultJobs();
  std::vector<SessionOptions> worker_options(workers);
  std::vector<std::unique_ptr<PolicyChecker>> checkers;
  auto rules = CompileExtractionRules(**pack);
  if (!rules) return ReportError("cannot compile extract.json", rules.error());
  for (SessionOptions& options : worker_options) {
    auto checker = PolicyChecker::Create(*pack);
    if (!checker) return ReportError("cannot load the pack's Lua", checker.error());
    options.checker = checker->get();
    options.extraction_rules = *rules;
    options.call_result_texts = false;  // the replay reads the decisions, not the texts
    checkers.push_back(std::move(checker).value());
  }
  ReplayTally tally;
  std::vector<ConversationId> replayed;
  const int64_t start = MonotonicMs();
  ProgressBar progress("replay");
  ReplayInput input(o.traces);
  // The workers parse the lines too: this thread only reads them and prints
  // the results.
  const TraceLimits limits = input.limits();
  ReplayJobs jobs(
      workers, 4 * workers, [&](ReplayWork& work) { return ParseLine(o, limits, work); },
      [&](ReplayWork& work, size_t worker) {
        return ReplayLine(o, *store, *pack, worker_options[worker], work);
      });
  // Takes the next line's result back, in input order: its output, its
  // place in the tally; false when the replay must stop there (exit 2).
  auto take = [&](ReplayDone& done) {
    std::cout << done.out;
    // Only when there is something to say: std::cerr is tied to std::cout,
    // so every write to it flushes std::cout (a write(2) per conversation).
    if (!done.err.empty()) std::cerr << done.err;
    tally.Merge(done.tally);
    if (done.replayed) replayed.push_back(std::move(done.id));
    if (done.stop) return false;
    if (!progress.enabled()) return true;
    uint64_t elapsed = static_cast<uint64_t>(std::max<int64_t>(1, MonotonicMs() - start));
    progress.Update(input.bytes_read(), input.file_size(),
                    std::to_string(tally.conversations()) + " conversations, " +
                        std::to_string(tally.events() * 1000 / elapsed) + " events/s");
    return true;
  };
  uint64_t submitted = 0;
  while (auto line = input.NextText()) {
    if (o.limit != 0 && submitted >= o.limit) {
      // The later files are still opened (an unreadable one is an error),
      // but nothing more is replayed. Every line submitted counts once, as
      // a conversation or a failed one, unless the replay stops there.
      input.SkipRestOfFile();
      continue;
    }
    jobs.Submit(ReplayWork{std::move(line->where), std::move(line->text), std::nullopt, {}});
    ++submitted;
    while (auto done = jobs.Next(jobs.Full())) {
      if (!take(*done)) return kExitUsage;
    }
  }
  while (auto done = jobs.Next(true)) {
    if (!take(*done)) return kExitUsage;
  }
  if (!input.error().ok()) return ReportError("cannot read trace", input.error());
  progress.Finish();
  const double seconds = std::max<int64_t>(1, MonotonicMs() - start) / 1000.0;
  if (!o.audit_html.empty()) {
    Status written = WriteAuditHtml(*store, replayed, o.audit_html,
                                    visibility->has_value() ? &visibility->value() : nullptr);
    if (!written.ok()) return ReportError("cannot write " + o.audit_html, written);
  }
  if (o.common.json) {
    nlohmann::json summary = tally.ToJson();
    summary["events_per_s"] = static_cast<uint64_t>(tally.events() / seconds);
    summary["seconds"] = seconds;
    summary["pack"] = (*pack)->name();
    summary["pack_version"] = (*pack)->version();
    summary["store"] = o.common.store;
    summary["prefix"] = o.prefix;
    PrintJson(summary);
  } else {
    if (!tally.all_as_expected() && o.quiet) {
      for (const ReplayMismatch& m : tally.mismatches()) {
        std::cout << "MISMATCH " << m.conversation << " " << m.call_id << " " << m.tool
                  << ": expected " << m.expected_decision
                  << (m.expected_rule.empty() ? "" : " by " + m.expected_rule) << ", got "
                  << m.decision << (m.rule.empty() ? "" : " by " + m.rule)
                  << (m.reason.empty() ? "" : ": " + m.reason) << "\n";
      }
    }
    PrintReplaySummary(tally, seconds, o.prefix);
  }
  // Skipped lines were reported on stderr with their file:line. A replay in
  // CI must not pass on broken input, so they make the exit code 2 unless
  // the user said they may be skipped.
  if (tally.failed_conversations() > 0 && !o.allow_unreadable) {
    std::cerr << "taskledger: " << tally.failed_conversations()
              << " conversation(s) could not be replayed (see above); exit 2 "
                 "(--allow-unreadable to score only the readable ones)\n";
    return kExitUsage;
  }
  if (tally.policy_errors() > 0 && !o.allow_policy_errors) {
    std::cerr << "taskledger: " << tally.policy_errors()
              << " rule evaluation(s) failed (see \"policy errors\" above); exit 1 "
                 "(--allow-policy-errors to only report them)\n";
    return kExitCheckFailed;
  }
  return tally.all_as_expected() ? kExitOk : kExitCheckFailed;
}

}  // namespace

void AddReplayVerb(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ReplayOptions>();
  CLI::App* verb = app.add_subcommand(
      "replay",
      "Replay recorded conversations (JSON Lines traces) through extraction, the policy "
      "gate and the ledger; score the labeled decisions");
  verb->add_option("trace", options->traces, "Trace files (docs/trace-format.md)")->required();
  verb->add_option("--rules", options->rules, "Rule pack folder (rules/<pack>)")->required();
  AddCommonOptions(*verb, options->common);
  CLI::Option* prefix = verb->add_option(
      "--prefix", options->prefix,
      "Prefix for conversation ids in the store (default: run-unique for a durable store, so "
      "reruns do not conflict; none for memory)");
  verb->add_flag("--strict", options->strict, "Stop at the first unreadable trace line (exit 2)");
  verb->add_flag("--allow-unreadable", options->allow_unreadable,
                 "Skip conversations that cannot be read or replayed (reported on stderr) and "
                 "exit 0/1 on the readable ones alone; without it any such conversation "
                 "makes the exit code 2");
  verb->add_flag("--allow-policy-errors", options->allow_policy_errors,
                 "Report rules that failed (and so denied) but do not exit 1 for them alone");
  verb->add_flag("-q,--quiet", options->quiet, "Print only mismatches and the summary");
  verb->add_option("--limit", options->limit, "Replay at most this many conversations");
  verb->add_option("--jobs", options->jobs,
                   "Replay conversations on this many threads (default: the hardware threads; "
                   "1: one after another). The output is the same, in input order")
      ->check(CLI::Range(1, 1024));
  verb->add_option("--audit-html", options->audit_html,
                   "Write a self-contained audit page of the replayed conversations");
  verb->callback([options, prefix, &exit_code] {
    options->prefix_given = prefix->count() > 0;
    exit_code = RunReplay(*options);
  });
}

}  // namespace taskledger::cli
