// `taskledger commands`: the operator's view of the command ledger.
//   commands list [--run R] [--state S]   commands by state: in flight, uncertain,
//                                         blocked, expired leases (or any state name)
//   commands show RUN KEY                 one command record
//   commands approve|deny|cancel RUN KEY --reason TEXT [--actor A] [--dry-run]
//   commands retry RUN KEY --reason TEXT [--actor A] [--dry-run]   replay a failed command
//   commands reconcile RUN KEY --found EXTERNAL_ID --evidence TEXT | --not-found [--reason TEXT]
//                                         settle an uncertain command by what the operator
//                                         found: succeeded, or released for a retry
//                                         (escalated once its attempts are spent)
// --store memory (an empty in-process store) or a redis:// URL. Exit 0 ok,
// 1 the transition was refused (wrong state, budget spent), 2 usage, unknown
// command or store error.
#include <iostream>
#include <string>
#include <vector>

#include "cli_common.h"
#include "taskledger/base/clock.h"
#include "taskledger/commands/command.h"
#include "taskledger/commands/command_ledger.h"
#include "taskledger/commands/command_store.h"
#include "taskledger/commands/command_transition.h"
#include "taskledger/commands/memory_command_store.h"
#include "taskledger/commands/redis_command_store.h"
#include "taskledger/ledger/redis_store.h"
#include "verbs.h"

namespace taskledger::cli {
namespace {

struct CommandsOptions {
  CommonOptions common;
  std::string run, key, state, reason, actor = "cli";
  bool dry_run = false;
  std::string found, evidence;  // reconcile
  bool not_found = false;
};

Result<std::unique_ptr<CommandStore>> OpenCommands(const CommonOptions& o) {
  if (o.store.empty() || o.store == "memory") {
    NoteIfEphemeralStore(o);
    return NewMemoryCommandStore();
  }
  RedisOptions ro;
  ro.url = o.store;
  return OpenRedisCommandStore(ro);
}

// The operator's grouping: what needs attention first.
std::string Group(const Command& c, int64_t now_ms) {
  if (c.state == CommandState::kLeased)
    return c.lease_expires_ms <= now_ms ? "expired_lease" : "in_flight";
  return std::string(CommandStateName(c.state));
}

bool Matches(const Command& c, const std::string& filter, int64_t now_ms) {
  if (filter.empty()) return true;
  const std::string g = Group(c, now_ms);
  if (filter == g) return true;
  if (filter == "expired" && g == "expired_lease") return true;
  return filter == CommandStateName(c.state);
}

void PrintCommandLine(const Command& c, int64_t now_ms) {
  std::cout << Group(c, now_ms) << "\t" << c.run.run << "\t" << c.command_key << "\t" << c.call.tool
            << "\t" << c.target << "\tattempts=" << c.attempts;
  if (!c.last_error.empty()) std::cout << "\terror=" << c.last_error;
  if (c.escalated) std::cout << "\tescalated: " << c.escalation_reason;
  std::cout << "\n";
}

int RunList(const CommandsOptions& o, CommandStore& store) {
  std::vector<std::string> runs;
  if (!o.run.empty()) {
    runs.push_back(o.run);
  } else {
    auto listed = store.ListRuns(o.common.tenant);
    if (!listed) return ReportError("cannot list runs", listed.error());
    runs = std::move(*listed);
  }
  const int64_t now = SystemClock().NowMs();
  nlohmann::json rows = nlohmann::json::array();
  for (const std::string& run : runs) {
    auto commands = store.ListCommands({o.common.tenant, run});
    if (!commands) return ReportError("cannot list run " + run, commands.error());
    for (const Command& c : *commands) {
      if (!Matches(c, o.state, now)) continue;
      if (o.common.json) {
        nlohmann::json j = EncodeCommand(c);
        j["group"] = Group(c, now);
        rows.push_back(std::move(j));
      } else {
        PrintCommandLine(c, now);
      }
    }
  }
  if (o.common.json) PrintJson({{"tenant", o.common.tenant}, {"commands", rows}});
  return kExitOk;
}

int RunShow(const CommandsOptions& o, CommandStore& store) {
  auto c = store.Get({o.common.tenant, o.run}, o.key);
  if (!c) return ReportError("cannot read command " + o.key, c.error());
  nlohmann::json j = EncodeCommand(*c);
  j["group"] = Group(*c, SystemClock().NowMs());
  if (o.common.json)
    PrintJson(j);
  else
    std::cout << j.dump(2) << "\n";
  return kExitOk;
}

// Refused transitions (wrong state, budget, policy) are a failed check (1);
// anything else is an input or store problem (2).
int Refused(std::string_view what, const Status& s) {
  ReportError(what, s);
  const StatusCode c = s.code();
  return c == StatusCode::kFailedPrecondition || c == StatusCode::kLimitExceeded ||
                 c == StatusCode::kPolicyError || c == StatusCode::kConflict
             ? kExitCheckFailed
             : kExitUsage;
}

int Report(const CommandsOptions& o, const Command& c, bool dry_run, std::string_view action) {
  if (o.common.json) {
    PrintJson({{"action", action}, {"dry_run", dry_run}, {"command", EncodeCommand(c)}});
  } else {
    std::cout << (dry_run ? "dry run: would " : "") << action << " " << c.command_key << " -> "
              << CommandStateName(c.state) << "\n";
  }
  return kExitOk;
}

int RunTransition(const CommandsOptions& o, CommandStore& store, Transition t) {
  const RunId run{o.common.tenant, o.run};
  const std::string action(TransitionName(t));
  if (o.dry_run) {
    // The same pure state machine the stores run, on copies: nothing is written.
    auto c = store.Get(run, o.key);
    if (!c) return ReportError("cannot read command " + o.key, c.error());
    auto record = store.GetRun(run);
    if (!record) return ReportError("cannot read run " + o.run, record.error());
    TransitionRequest req;
    req.run = run;
    req.command_key = o.key;
    req.transition = t;
    req.now_ms = SystemClock().NowMs();
    req.actor = o.actor;
    req.reason = o.reason;
    Command after = *c;
    RunCounters counters = record->counters;
    Status s = ApplyTransition(after, counters, req);
    if (!s.ok()) return Refused(action + " " + o.key, s);
    return Report(o, after, true, action);
  }
  CommandLedger ledger(store, SystemClock());
  Result<Command> r = Status::Internal("unreachable");
  switch (t) {
    case Transition::kApprove:
      r = ledger.Approve(run, o.key, o.actor, o.reason);
      break;
    case Transition::kDeny:
      r = ledger.Deny(run, o.key, o.actor, o.reason);
      break;
    case Transition::kCancel:
      r = ledger.Cancel(run, o.key, o.actor, o.reason);
      break;
    default:
      break;
  }
  if (!r) return Refused(action + " " + o.key, r.error());
  return Report(o, *r, false, action);
}

int RunRetry(const CommandsOptions& o, CommandStore& store) {
  CommandLedger ledger(store, SystemClock());
  ReplayRequest req{o.actor, o.reason, o.dry_run};
  auto plan = ledger.Replay({o.common.tenant, o.run}, o.key, req);
  if (!plan) return Refused("retry " + o.key, plan.error());
  return Report(o, plan->command, o.dry_run, "retry");
}

int RunReconcile(const CommandsOptions& o, CommandStore& store) {
  if (o.found.empty() == !o.not_found) {
    std::cerr << "taskledger: commands reconcile needs exactly one of --found EXTERNAL_ID "
                 "(with --evidence) and --not-found\n";
    return kExitUsage;
  }
  if (!o.found.empty() && o.evidence.empty()) {
    std::cerr << "taskledger: commands reconcile --found needs --evidence TEXT (what shows the "
                 "call took effect)\n";
    return kExitUsage;
  }
  CommandLedger ledger(store, SystemClock());
  OperatorFinding finding{!o.found.empty(), o.found, o.evidence, o.actor, o.reason};
  auto r = ledger.ReconcileByOperator({o.common.tenant, o.run}, o.key, finding);
  if (!r) return Refused("reconcile " + o.key, r.error());
  return Report(o, *r, false, "reconcile");
}

}  // namespace

void AddCommandsVerb(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CommandsOptions>();
  CLI::App* verb = app.add_subcommand("commands", "List and act on commands of the command ledger");
  verb->require_subcommand(1);
  AddCommonOptions(*verb, o->common);
  using Fn = std::function<int(const CommandsOptions&, CommandStore&)>;
  auto run = [o, &exit_code](const Fn& fn) {
    auto store = OpenCommands(o->common);
    if (!store) {
      exit_code = ReportError("cannot open command store " + o->common.store, store.error());
      return;
    }
    exit_code = fn(*o, **store);
  };
  auto target = [o](CLI::App* sub) {
    sub->add_option("run", o->run, "Run id")->required();
    sub->add_option("key", o->key, "Command key")->required();
    sub->add_flag("--json", o->common.json, "Print machine-readable JSON");
    sub->add_option("--store", o->common.store, "memory or a redis:// or redis+cluster:// URL");
    sub->add_option("--tenant", o->common.tenant, "Tenant");
  };
  auto decide = [o, target](CLI::App* sub) {
    target(sub);
    sub->add_option("--reason", o->reason, "Why (recorded on the command)")->required();
    sub->add_option("--actor", o->actor, "Who acts (recorded; default cli)");
    sub->add_flag("--dry-run", o->dry_run, "Check the transition; change nothing");
  };

  CLI::App* list = verb->add_subcommand(
      "list", "Commands by state: in_flight, uncertain, blocked, expired_lease, ...");
  list->add_option("--run", o->run, "Only this run");
  std::vector<std::string> filters = {"in_flight", "expired", "expired_lease"};
  for (int s = 0; s < kCommandStateCount; ++s) {
    filters.emplace_back(CommandStateName(static_cast<CommandState>(s)));
  }
  list->add_option("--state", o->state,
                   "in_flight, uncertain, blocked, expired (leases), or a state name")
      ->check(CLI::IsMember(filters));
  list->add_flag("--json", o->common.json, "Print machine-readable JSON");
  list->add_option("--store", o->common.store, "memory or a redis:// or redis+cluster:// URL");
  list->add_option("--tenant", o->common.tenant, "Tenant");
  list->callback([run] { run(RunList); });

  CLI::App* show = verb->add_subcommand("show", "Show one command record");
  target(show);
  show->callback([run] { run(RunShow); });

  for (auto [name, t, help] :
       {std::tuple{"approve", Transition::kApprove, "Approve a blocked command"},
        std::tuple{"deny", Transition::kDeny, "Deny a blocked command (cancels it)"},
        std::tuple{"cancel", Transition::kCancel, "Cancel a command that has not run"}}) {
    CLI::App* sub = verb->add_subcommand(name, help);
    decide(sub);
    Transition transition = t;
    sub->callback([run, transition] {
      run([transition](const CommandsOptions& opts, CommandStore& s) {
        return RunTransition(opts, s, transition);
      });
    });
  }
  CLI::App* retry =
      verb->add_subcommand("retry", "Replay a failed command (budgets and policy re-check apply)");
  decide(retry);
  retry->callback([run] { run(RunRetry); });

  CLI::App* reconcile = verb->add_subcommand(
      "reconcile",
      "Settle an uncertain command: --found EXTERNAL_ID --evidence TEXT, or --not-found");
  target(reconcile);
  reconcile->add_option("--found", o->found, "The call took effect; the id the system gave it");
  reconcile->add_option("--evidence", o->evidence, "What shows it took effect (with --found)");
  reconcile->add_flag("--not-found", o->not_found,
                      "The call did not take effect: release it for a retry (or escalate)");
  reconcile->add_option("--reason", o->reason, "A note (kept when the command is escalated)");
  reconcile->add_option("--actor", o->actor, "Who checked (recorded; default cli)");
  reconcile->callback([run] { run(RunReconcile); });
}

}  // namespace taskledger::cli
