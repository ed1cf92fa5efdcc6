// `taskledger audit`: read back what happened in conversations of a durable
// store (or of the memory store within one process: `replay --audit-html`).
//   audit list                        conversations of the tenant
//   audit show CONV [--version N] [--rules PACK]   the state at version N, with
//                                     provenance; with --rules, what the pack's
//                                     pack.json "render" kept out of the prompt
//   audit diff CONV FROM TO           what changed between two versions
//   audit decisions CONV              the decision log (rules, outcomes, version seen)
//   audit calls CONV                  each tool call with the version it was decided on
//   audit explain CONV CALL_ID [--rules PACK]   the decision's evidence chain
//   audit --html FILE [--conversation C]... [--rules PACK]   the self-contained audit page
// Exit 0 ok, 2 bad usage, unknown conversation or version, store error.
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "audit_explain.h"
#include "audit_history.h"
#include "audit_html.h"
#include "audit_visibility.h"
#include "cli_common.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/render/state_block.h"
#include "verbs.h"

namespace taskledger::cli {
namespace {

struct AuditOptions {
  CommonOptions common;
  std::string html;
  std::vector<std::string> conversations;
  std::string conversation;
  std::optional<uint64_t> version;
  uint64_t from = 0, to = 0;
  std::string format = "plain";
  std::string call_id;
  std::string rules;
};

Result<std::vector<ConversationId>> AllConversations(Store& store, const std::string& tenant) {
  auto names = store.ListConversations(tenant);
  if (!names) return names.error();
  std::vector<ConversationId> ids;
  for (std::string& n : *names) ids.push_back({tenant, std::move(n)});
  return ids;
}

int RunHtml(const AuditOptions& o, Store& store) {
  std::vector<ConversationId> ids;
  if (o.conversations.empty()) {
    auto all = AllConversations(store, o.common.tenant);
    if (!all) return ReportError("cannot list conversations", all.error());
    ids = std::move(*all);
  } else {
    for (const std::string& c : o.conversations) ids.push_back({o.common.tenant, c});
  }
  auto vis = LoadRenderVisibility(o.rules);
  if (!vis) return ReportError("audit --rules", vis.error());
  Status s = WriteAuditHtml(store, ids, o.html, *vis ? &**vis : nullptr);
  if (!s.ok()) return ReportError("cannot write the audit page", s);
  if (o.common.json)
    PrintJson({{"html", o.html}, {"conversations", ids.size()}});
  else
    std::cout << "wrote " << o.html << " (" << ids.size() << " conversations)\n";
  return kExitOk;
}

int RunList(const AuditOptions& o, Store& store) {
  auto all = AllConversations(store, o.common.tenant);
  if (!all) return ReportError("cannot list conversations", all.error());
  nlohmann::json rows = nlohmann::json::array();
  for (const ConversationId& id : *all) {
    auto head = store.Head(id);
    if (!head) return ReportError("cannot read " + id.conversation, head.error());
    rows.push_back({{"conversation", id.conversation}, {"version", *head}});
    if (!o.common.json) std::cout << id.conversation << "\tv" << *head << "\n";
  }
  if (o.common.json) PrintJson({{"tenant", o.common.tenant}, {"conversations", rows}});
  return kExitOk;
}

std::optional<StateBlockFormat> ParseFormat(const std::string& f) {
  if (f == "plain") return StateBlockFormat::kPlain;
  if (f == "markdown") return StateBlockFormat::kMarkdown;
  if (f == "xml") return StateBlockFormat::kXml;
  if (f == "json") return StateBlockFormat::kJson;
  return std::nullopt;
}

int RunShow(const AuditOptions& o, Store& store) {
  auto vis = LoadRenderVisibility(o.rules);
  if (!vis) return ReportError("audit show --rules", vis.error());
  auto h = LoadAuditHistory(store, {o.common.tenant, o.conversation});
  if (!h) return ReportError("cannot read " + o.conversation, h.error());
  const uint64_t head = h->states.size() - 1;
  const uint64_t v = o.version.value_or(head);
  if (v > head) {
    return ReportError(o.conversation,
                       Status::NotFound("version " + std::to_string(v) + " is past the head " +
                                        std::to_string(head)));
  }
  const LedgerState& state = h->states[v];
  const int64_t at = v == 0 ? 0 : h->turns[v - 1].record.committed_at_ms;
  std::optional<PromptMarks> marks;
  if (*vis) marks = MarkPrompt(state, at, **vis);
  if (o.common.json) {
    nlohmann::json out = {
        {"conversation", o.conversation}, {"version", v}, {"state", EncodeState(state)}};
    if (marks) out["prompt"] = PromptMarksJson(*marks);
    PrintJson(out);
    return kExitOk;
  }
  StateBlockOptions options;
  options.format = *ParseFormat(o.format);
  options.include_provenance = true;
  auto block = RenderStateBlock(state, at, options);
  if (!block) return ReportError("cannot render", block.error());
  std::cout << o.conversation << " at version " << v << " of " << head << "\n"
            << block->text << "\n";
  if (marks) std::cout << PromptMarksText(*marks);
  return kExitOk;
}

int RunDiff(const AuditOptions& o, Store& store) {
  auto h = LoadAuditHistory(store, {o.common.tenant, o.conversation});
  if (!h) return ReportError("cannot read " + o.conversation, h.error());
  const uint64_t head = h->states.size() - 1;
  if (o.from > head || o.to > head) {
    return ReportError(o.conversation,
                       Status::NotFound("versions must be within 0.." + std::to_string(head)));
  }
  const int64_t at = o.to == 0 ? 0 : h->turns[o.to - 1].record.committed_at_ms;
  nlohmann::json diff = EncodeAuditDiff(Diff(h->states[o.from], h->states[o.to], at));
  if (o.common.json) {
    PrintJson(
        {{"conversation", o.conversation}, {"from", o.from}, {"to", o.to}, {"changes", diff}});
    return kExitOk;
  }
  std::cout << o.conversation << ": version " << o.from << " -> " << o.to << ", " << diff.size()
            << " changes\n";
  for (const auto& c : diff) {
    const std::string change = c["change"];
    std::cout << (change == "added"     ? "+ "
                  : change == "removed" ? "- "
                                        : "~ ")
              << c["category"].get<std::string>() << "." << c["key"].get<std::string>();
    if (c.contains("before")) std::cout << "  was " << c["before"].dump();
    if (c.contains("after")) {
      std::cout << "  now " << c["after"].dump() << "  (" << c.value("source", std::string())
                << (c.value("verified", false) ? ", verified" : ", claimed") << ")";
    }
    std::cout << "\n";
  }
  return kExitOk;
}

int RunDecisions(const AuditOptions& o, Store& store) {
  auto h = LoadAuditHistory(store, {o.common.tenant, o.conversation});
  if (!h) return ReportError("cannot read " + o.conversation, h.error());
  nlohmann::json all = nlohmann::json::array();
  for (const AuditTurn& t : h->turns) {
    for (const DecisionRecord& rec : t.record.decisions) {
      nlohmann::json d = EncodeDecision(rec);
      nlohmann::json row = d;
      row["committed_in"] = t.record.turn;
      all.push_back(row);
      if (o.common.json) continue;
      std::cout << "turn " << t.record.turn << "  " << d.value("call_id", std::string()) << " "
                << d.value("tool", std::string()) << " -> " << d.value("decision", std::string());
      if (!d.value("rule", std::string()).empty())
        std::cout << " [" << d["rule"].get<std::string>() << "]";
      std::cout << "  seen v" << d.value("version_seen", 0) << "+" << d.value("staged_seen", 0);
      if (!d.value("reason", std::string()).empty())
        std::cout << ": " << d["reason"].get<std::string>();
      std::cout << "\n";
      if (d.contains("rules")) {
        for (const auto& r : d["rules"]) {
          std::cout << "    " << r.value("id", std::string()) << ": "
                    << r.value("outcome", std::string());
          if (!r.value("reason", std::string()).empty())
            std::cout << " (" << r["reason"].get<std::string>() << ")";
          std::cout << "\n";
        }
      }
    }
  }
  if (o.common.json) PrintJson({{"conversation", o.conversation}, {"decisions", all}});
  return kExitOk;
}

int RunCalls(const AuditOptions& o, Store& store) {
  auto h = LoadAuditHistory(store, {o.common.tenant, o.conversation});
  if (!h) return ReportError("cannot read " + o.conversation, h.error());
  nlohmann::json rows = nlohmann::json::array();
  // The last decision taken for a call id up to the call's own turn names
  // the version it saw: in the same turn for a call that did not run, in an
  // earlier one for a write whose decision was committed ahead of it.
  std::map<std::pair<std::string, std::string>, const DecisionRecord*> last_decision;
  for (const AuditTurn& t : h->turns) {
    for (const DecisionRecord& d : t.record.decisions) last_decision[{d.call_id, d.tool}] = &d;
    for (const CallRecord& c : t.record.calls) {
      nlohmann::json row = {{"turn", t.record.turn}, {"call_id", c.call.id},
                            {"tool", c.call.tool},   {"arguments", c.call.arguments},
                            {"writes", c.writes},    {"outcome", c.outcome}};
      if (auto it = last_decision.find({c.call.id, c.call.tool}); it != last_decision.end()) {
        const DecisionRecord& d = *it->second;
        row["decision"] = d.decision;
        row["rule"] = d.rule;
        row["version_seen"] = d.version_seen;
        row["staged_seen"] = d.staged_seen;
      }
      if (!o.common.json) {
        std::cout << "turn " << t.record.turn << "  " << c.call.id << " " << c.call.tool << " "
                  << c.call.arguments.dump() << " -> " << OutcomeMeaning(c.outcome);
        if (row.contains("version_seen")) {
          std::cout << "  (decided on v" << row["version_seen"] << "+" << row["staged_seen"] << ": "
                    << row["decision"].get<std::string>() << ")";
        }
        std::cout << "\n";
      }
      rows.push_back(std::move(row));
    }
  }
  if (o.common.json) PrintJson({{"conversation", o.conversation}, {"calls", rows}});
  return kExitOk;
}

int RunExplain(const AuditOptions& o, Store& store) {
  return ExplainCall(store, {o.common.tenant, o.conversation}, o.call_id, o.rules, o.common.json);
}

}  // namespace

void AddAuditVerb(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<AuditOptions>();
  CLI::App* verb = app.add_subcommand(
      "audit", "Inspect conversations in a store: state, diffs, decisions, calls, HTML page");
  verb->require_subcommand(0, 1);
  AddCommonOptions(*verb, o->common);
  verb->add_option("--html", o->html, "Write a self-contained audit page to this file");
  verb->add_option("--conversation", o->conversations,
                   "Conversations for --html (default: all of the tenant)");
  verb->add_option("--rules", o->rules,
                   "Rule pack folder for --html: mark what its pack.json \"render\" kept out "
                   "of the prompt");

  auto run = [o, &exit_code](int (*fn)(const AuditOptions&, Store&)) {
    NoteIfEphemeralStore(o->common);
    auto store = OpenStoreOrReport(o->common);
    exit_code = store ? fn(*o, *store) : kExitUsage;
  };
  auto common = [&](CLI::App* sub) {
    // The verb-level options also work after the subcommand name.
    sub->add_flag("--json", o->common.json, "Print machine-readable JSON");
    sub->add_option("--store", o->common.store,
                    "Ledger store: memory or a redis:// or redis+cluster:// URL");
    sub->add_option("--tenant", o->common.tenant, "Tenant namespace in the store");
  };
  CLI::App* list =
      verb->add_subcommand("list", "List the tenant's conversations with their head version");
  common(list);
  list->callback([run] { run(RunList); });

  CLI::App* show =
      verb->add_subcommand("show", "Show a conversation's state at a version, with provenance");
  common(show);
  show->add_option("conversation", o->conversation, "Conversation id")->required();
  show->add_option("--version", o->version, "Version (default: the head)");
  show->add_option("--format", o->format, "plain, markdown, xml or json")
      ->check(CLI::IsMember({"plain", "markdown", "xml", "json"}));
  show->add_option("--rules", o->rules,
                   "Rule pack folder: also list what its pack.json \"render\" kept out of the "
                   "prompt (internal entries, redacted ones)");
  show->callback([run] { run(RunShow); });

  CLI::App* diff = verb->add_subcommand("diff", "Diff two versions of a conversation");
  common(diff);
  diff->add_option("conversation", o->conversation, "Conversation id")->required();
  diff->add_option("from", o->from, "From version")->required();
  diff->add_option("to", o->to, "To version")->required();
  diff->callback([run] { run(RunDiff); });

  CLI::App* decisions = verb->add_subcommand("decisions", "The decision log of a conversation");
  common(decisions);
  decisions->add_option("conversation", o->conversation, "Conversation id")->required();
  decisions->callback([run] { run(RunDecisions); });

  CLI::App* calls =
      verb->add_subcommand("calls", "Each tool call with the ledger version it was decided on");
  common(calls);
  calls->add_option("conversation", o->conversation, "Conversation id")->required();
  calls->callback([run] { run(RunCalls); });

  CLI::App* explain = verb->add_subcommand(
      "explain", "Why a call was decided so: every rule, the entries each read, their sources");
  common(explain);
  explain->add_option("conversation", o->conversation, "Conversation id")->required();
  explain->add_option("call_id", o->call_id, "The tool call's id")->required();
  explain->add_option("--rules", o->rules,
                      "Rule pack folder: names the output path each entry was extracted from");
  explain->callback([run] { run(RunExplain); });

  verb->callback([o, verb, run, &exit_code] {
    if (!verb->get_subcommands().empty()) return;  // a subcommand ran
    if (o->html.empty()) {
      std::cerr
          << "taskledger audit: give a subcommand (list, show, diff, decisions, calls, explain) "
             "or "
             "--html FILE\n";
      exit_code = kExitUsage;
      return;
    }
    run(RunHtml);
  });
}

}  // namespace taskledger::cli
